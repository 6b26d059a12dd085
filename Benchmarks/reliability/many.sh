#!/usr/bin/env bash
# One watcher over N instances of a one-step workflow whose step takes 0.2 s:
# every instance must finish, each in its turn for the machine's two local
# slots (N × 0.2 s / 2 at best). Prints how many finished and how long it took.
#
# usage: N=1000 bash Benchmarks/reliability/many.sh   (FLOWDIR=path/to/flowdir)
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/../.."
FD=${FLOWDIR:-$PWD/.build/debug/flowdir}
N=${N:-1000}
W=$(mktemp -d "${TMPDIR:-/tmp}/flowdir-many-XXXXXX")
P=""
trap '[ -z "$P" ] || kill "$P" 2>/dev/null || true; rm -rf "$W"' EXIT
export XDG_CONFIG_HOME=$W/config FLOWDIR_CONFIG= XDG_STATE_HOME=$W/state
mkdir -p "$W/root" "$W/wf/tools"
cat > "$W/wf/tools/Slow.yaml" <<'T'
kind: Slow
outputs: { out: TextRef }
run:
  command: [sh, -c, 'sleep 0.2; echo ok > "$0"', "{outputs.out}"]
T
printf 'schema: app.workflow/v2\nname: One\nnodes:\n  - { id: s, kind: Slow }\n' > "$W/wf/t.yaml"
for i in $(seq 1 "$N"); do "$FD" new "$W/wf/t.yaml" "$W/root/i$i" >/dev/null; done
start=$(date +%s.%N)
"$FD" watch "$W/root" > "$W/watch.log" 2>&1 &
P=$!
limit=$(( N / 5 + 120 ))
n=0
for _ in $(seq 1 "$limit"); do
  sleep 1
  # `|| true`: none finished yet is grep's exit 1, which pipefail would make the script's end.
  n=$({ grep -l '^state: succeeded' "$W"/root/*/nodes/s/state.yaml 2>/dev/null || true; } | wc -l)
  [ "$n" -eq "$N" ] && break
done
end=$(date +%s.%N)
stuck=$({ grep -L '^state: succeeded' "$W"/root/*/nodes/s/state.yaml 2>/dev/null || true; } | wc -l)
echo "instances=$N finished=$n stuck=$stuck seconds=$(echo "$end - $start" | bc) (best possible: $(echo "scale=1; $N * 0.2 / 2" | bc) s)"
[ "$n" -eq "$N" ]
