#!/usr/bin/env bash
# The one debug build the demo and the test command share: `swift build`
# with the arguments given (`--product flowdir` for the demo,
# `--build-tests` for the tests; the second reuses what the first compiled).
# A first build takes minutes, so it says where it is every 20 s instead of
# going quiet; its full output is kept in .build/build-output.log and shown
# (the errors first) if it fails.
#
#   bash scripts/build.sh [swift build arguments…]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build
log=.build/build-output.log
start=$(date +%s)
echo "build: swift build $* (a first build takes several minutes; a line every 20 s)"
swift build "$@" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' INT TERM
next=$((start + 20))
while kill -0 "$pid" 2>/dev/null; do
  sleep 1
  now=$(date +%s)
  [ "$now" -ge "$next" ] || continue
  next=$((now + 20))
  # SwiftPM's own progress lines: "[412/1187] Compiling NIOCore …".
  last=$(grep -E '^\[[0-9]+/[0-9]+\]' "$log" | tail -1 | cut -c1-100 || true)
  echo "build: $((now - start)) s  ${last:-fetching and resolving packages}"
done
rc=0
wait "$pid" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "build: swift build $* failed after $(( $(date +%s) - start )) s (exit $rc); its errors, then the end of $log:" >&2
  grep -E 'error:' "$log" | head -20 >&2 || true
  tail -30 "$log" >&2
  exit "$rc"
fi
echo "build: done in $(( $(date +%s) - start )) s"
