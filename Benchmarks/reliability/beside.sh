#!/usr/bin/env bash
# The full test suite, RUNS times in a row, while many.sh (one watcher over
# 1,000 instances) runs again and again beside it: the tests must pass on a
# loaded machine, where every wait is on an event or a test clock. Prints one
# line a run and the benchmark's rounds; exits 1 if any run failed.
#
# usage: RUNS=5 bash Benchmarks/reliability/beside.sh
#   after `bash scripts/build.sh --build-tests` and with Slurm up
#   (`bash scripts/slurm-local.sh`); every component is required.
set -Eeuo pipefail
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
out=$(mktemp -d "${TMPDIR:-/tmp}/flowdir-beside-XXXXXX")
# Its own copy of flowdir: the benchmark's binary never changes under it.
cp .build/debug/flowdir "$out/flowdir"
( while [ ! -f "$out/stop" ]; do
    N=1000 FLOWDIR="$out/flowdir" bash Benchmarks/reliability/many.sh >>"$out/bench.txt" 2>&1 || true
  done ) &
bench=$!
trap 'touch "$out/stop"; wait "$bench" 2>/dev/null || true' EXIT
failed=0
for i in $(seq 1 "$RUNS"); do
  start=$(date +%s)
  rc=0
  FLOWDIR_REQUIRE_COMPONENTS=1 swift test --skip-build >"$out/run$i.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || failed=1
  echo "run $i: exit $rc in $(( $(date +%s) - start )) s: $(grep -E 'Test run with' "$out/run$i.log" | tail -1 || true)"
done
touch "$out/stop"
wait "$bench" || true
echo "beside them: $(grep -c 'instances=' "$out/bench.txt" || true) rounds of many.sh, $(grep -c 'stuck=0' "$out/bench.txt" || true) with none stuck; logs in $out"
grep 'instances=' "$out/bench.txt" || true
exit "$failed"
