#!/usr/bin/env bash
# The watcher's figures: answer latency (rename -> commit -> downstream start,
# p50/p99 over 200 drops), start-up time and RSS with 1,000 idle instances,
# CPU time over 60 s idle. Release build.
#   bash Benchmarks/watch.sh [DROPS] [IDLE_INSTANCES] [IDLE_SECONDS]
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bin=$(bash scripts/release-build.sh --product flowdir)/flowdir
work=${TMPDIR:-/tmp}/flowdir-watch-bench
python3 Benchmarks/watch.py "$bin" "$work" "${1:-200}" "${2:-1000}" "${3:-60}"
