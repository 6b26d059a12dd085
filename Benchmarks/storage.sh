#!/usr/bin/env bash
# Large outputs beside git (docs/storage.md), measured side by side in one run:
#  1. .git growth per rerun of a 2 MB output: with the content store
#     (storage.bigFile 512KB, the default) and without it (bigFile 1TB:
#     every version a git blob, as before the store);
#  2. a 200 MB output: flowdir's peak memory (max RSS) and the time
#     `flowdir run` adds over the tool, against `sha256sum` + `cp` of it.
#
#   Benchmarks/storage.sh [--reruns N]        FLOWDIR=path/to/flowdir (default .build/release, else .build/debug)
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
RERUNS=20
[ "${1:-}" = "--reruns" ] && RERUNS="$2"
FLOWDIR="${FLOWDIR:-$( [ -x .build/release/flowdir ] && echo "$PWD/.build/release/flowdir" || echo "$PWD/.build/debug/flowdir")}"
W=$(mktemp -d /var/tmp/flowdir-storage-XXXXXX); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/wf/tools"
cat > "$W/wf/tools/Big.yaml" <<'YAML'
kind: Big
outputs: { out: FileRef }
params: { bytes: { type: integer, default: 2097152 } }
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
gitbytes() { du -sb --exclude=lfs "$1/.git" | cut -f1; }
growth() {  # $1: config text; prints bytes of .git growth per rerun
  local dir="$W/g$2"; mkdir -p "$dir/config/flowdir"; printf '%s\n' "$1" > "$dir/config/flowdir/config.yaml"
  (cd "$W" && XDG_CONFIG_HOME="$dir/config" "$FLOWDIR" new wf/t.yaml "$dir/i" >/dev/null && XDG_CONFIG_HOME="$dir/config" "$FLOWDIR" run "$dir/i" >/dev/null)
  git -C "$dir/i" gc --quiet; local before; before=$(gitbytes "$dir/i")
  for _ in $(seq "$RERUNS"); do XDG_CONFIG_HOME="$dir/config" "$FLOWDIR" rerun "$dir/i" big >/dev/null; done
  git -C "$dir/i" gc --quiet; echo $(( ($(gitbytes "$dir/i") - before) / RERUNS ))
}
echo "flowdir: $FLOWDIR"
echo "1. .git growth per rerun of a 2 MB output ($RERUNS reruns, after git gc):"
echo "   with the store (bigFile 512KB): $(growth 'storage: { bigFile: 512KB }' a) bytes"
echo "   without (bigFile 1TB):          $(growth 'storage: { bigFile: 1TB }' b) bytes"

echo "2. a 200 MB output:"
d="$W/m"; mkdir -p "$d"
(cd "$W" && "$FLOWDIR" new wf/t.yaml "$d/i" --set big.bytes=209715200 >/dev/null)
head -c 209715200 /dev/urandom > "$W/src.bin"; sync
t0=$(date +%s.%N); head -c 209715200 /dev/urandom > "$W/tool.bin"; t1=$(date +%s.%N)
tool=$(echo "$t1 - $t0" | bc)
t0=$(date +%s.%N); sha256sum "$W/src.bin" >/dev/null; cp "$W/src.bin" "$W/copy.bin"; t1=$(date +%s.%N)
base=$(echo "$t1 - $t0" | bc)
out=$( { /usr/bin/time -f '%M %e' "$FLOWDIR" run "$d/i" >/dev/null; } 2>&1 | tail -1)
rss=$(echo "$out" | cut -d' ' -f1); total=$(echo "$out" | cut -d' ' -f2)
added=$(echo "$total - $tool" | bc)
echo "   flowdir run: ${total}s in all, the tool alone ${tool}s: flowdir adds ${added}s; peak memory $((rss / 1024)) MB"
echo "   sha256sum + cp of the same file: ${base}s; ratio $(echo "scale=2; $added / $base" | bc)"
echo "   committed as a pointer: $(git -C "$d/i" cat-file -p HEAD:nodes/big/out/out.bin | head -1)"
