#!/usr/bin/env bash
# Large files between machines (docs/storage.md), measured side by side in one run:
#  1. `flowdir clone` (file URL) of an instance with N runs of a 10 MB output:
#     git data bytes of the clone and seconds (content stays on the hub);
#  2. `storage free --to` of half of that content (the hub holds all of it): seconds;
#  3. `flowdir sync` of one new 20 MB output over ssh (the loopback sshd of
#     scripts/sshd-local.sh) against `scp` of that file + `git push` of the commit.
#
#   Benchmarks/storage-remote.sh [--runs N] [--ssh-rounds K] [--ssh-only]
#     FLOWDIR=path/to/flowdir (default .build/release, else .build/debug)
# Part 3 alternates the two (ABBA…) for K rounds (default 5) and gives the medians.
# Needs N × 10 MB twice on disk (instance and hub: 20 GB for N=1000) in /var/tmp; removed at the end.
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
REPO=$PWD
RUNS=1000; ROUNDS=5; SSH_ONLY=
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --ssh-rounds) ROUNDS="$2"; shift 2 ;;
    --ssh-only) SSH_ONLY=1; shift ;;
    *) echo "usage: $0 [--runs N] [--ssh-rounds K] [--ssh-only]" >&2; exit 2 ;;
  esac
done
FLOWDIR="${FLOWDIR:-$( [ -x .build/release/flowdir ] && echo "$PWD/.build/release/flowdir" || echo "$PWD/.build/debug/flowdir")}"
W=$(mktemp -d /var/tmp/flowdir-storage-remote-XXXXXX)
SSHD_PID=
cleanup() { [ -n "$SSHD_PID" ] && bash "$REPO/scripts/sshd-local.sh" stop "$SSHD_PID"; chmod -R u+w "$W" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
export XDG_CONFIG_HOME="$W/config" XDG_STATE_HOME="$W/state"
mkdir -p "$W/wf/tools"
cat > "$W/wf/tools/Big.yaml" <<'YAML'
kind: Big
outputs: { out: FileRef }
params: { bytes: { type: integer, default: 10485760 } }
run:
  command: [sh, -c, 'head -c "$1" /dev/urandom > "$0"', "{outputs.out}", "{params.bytes}"]
YAML
cat > "$W/wf/t.yaml" <<'YAML'
schema: app.workflow/v2
name: Storage
nodes:
  - { id: big, kind: Big }
edges: []
YAML
now() { date +%s.%N; }
echo "flowdir: $FLOWDIR"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
cd "$W"
if [ -z "$SSH_ONLY" ]; then
# 1. N runs, made with no remote (each run would sync), then synced once.
"$FLOWDIR" new wf/t.yaml a >/dev/null
"$FLOWDIR" run a >/dev/null
for _ in $(seq 2 "$RUNS"); do "$FLOWDIR" rerun a big >/dev/null; done
git init --quiet --bare --initial-branch=main hub.git
git -C a remote add origin "file://$W/hub.git"
t0=$(now); "$FLOWDIR" sync a >/dev/null; t1=$(now)
echo "1. $RUNS runs of a 10 MB output; first sync to the hub: $(echo "$t1 - $t0" | bc) s for $(du -sm hub.git/lfs | cut -f1) MB of content"
sync
t0=$(now); "$FLOWDIR" clone "file://$W/hub.git" b >/dev/null; t1=$(now)
echo "   flowdir clone (file URL): $(echo "$t1 - $t0" | bc) s; git data $(du -sb --exclude=lfs b/.git | cut -f1) bytes (.git without lfs/), working tree $(du -sb --exclude=.git b | cut -f1) bytes"
sync  # the disk's write-back of what came before is not this step's time
t0=$(now); "$FLOWDIR" storage get b >/dev/null; t1=$(now)
echo "   its current output fetched on demand (storage get): $(echo "$t1 - $t0" | bc) s"

# 2. free half of what A holds: the hub holds all of it.
held=$(du -sb a/.git/lfs/objects | cut -f1)
half="$(( held / 2 / 1048576 ))MB"
sync
t0=$(now); out=$("$FLOWDIR" storage free a --to "$half" | tail -3); t1=$(now)
echo "2. storage free --to $half (of $held bytes held, in 10 MB objects): $(echo "$t1 - $t0" | bc) s; $(echo "$out" | grep -m1 Freed)"
rm -rf b
git -C a remote remove origin; rm -rf hub.git a
fi

# 3. one new 20 MB output over ssh, against scp + git push.
SSHD_PID=$(bash "$REPO/scripts/sshd-local.sh" start "$W/sshd" "$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')")
export GIT_SSH_COMMAND="ssh -F $W/sshd/ssh_config"
"$FLOWDIR" new wf/t.yaml c --set big.bytes=20971520 >/dev/null
"$FLOWDIR" run c >/dev/null
git init --quiet --bare --initial-branch=main hub.git
git -C c remote add origin "flowdir-test:$W/hub.git"
"$FLOWDIR" sync c >/dev/null
git clone --quiet --bare hub.git hub2.git
git -C c remote add plain "flowdir-test:$W/hub2.git"
f=c/nodes/big/out/out.bin
fls=(); bases=()
for round in $(seq 1 "$ROUNDS"); do
  # A new 20 MB output, committed here and not yet on either hub.
  git -C c remote rename origin away
  "$FLOWDIR" rerun c big >/dev/null
  git -C c remote rename away origin
  measure_base() {
    local t0 t1; t0=$(now)
    scp -O -q -F "$W/sshd/ssh_config" "$f" "flowdir-test:$W/hub2.git/copy.bin"
    GIT_LFS_SKIP_PUSH=1 git -C c push --quiet --no-verify plain HEAD:main
    t1=$(now); bases+=("$(echo "$t1 - $t0" | bc)")
  }
  measure_flowdir() {
    local t0 t1; t0=$(now); "$FLOWDIR" sync c >/dev/null; t1=$(now); fls+=("$(echo "$t1 - $t0" | bc)")
  }
  # ABBA: the VM's slow and quiet moments fall on both alike.
  if [ $((round % 2)) = 1 ]; then measure_base; measure_flowdir; else measure_flowdir; measure_base; fi
done
fl=$(median "${fls[@]}"); base=$(median "${bases[@]}")
echo "3. one new 20 MB output over ssh, $ROUNDS rounds: flowdir sync ${fls[*]} s (median $fl); scp + git push ${bases[*]} s (median $base); ratio of medians $(echo "scale=2; $fl / $base" | bc)"
git -C hub.git lfs fsck >/dev/null && echo "   git lfs fsck of the hub: ok"
