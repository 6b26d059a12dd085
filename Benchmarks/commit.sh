#!/usr/bin/env bash
# Median time of one flowdir commit that changes one state file, at 50 and
# 5,000 files and at 10 and 100,000 commits of history (release build).
# Target: ≤ 1 ms median, flat (≤ 1.2× between smallest and largest case).
#
#   bash Benchmarks/commit.sh [DIR]     DIR: where instances go (default /dev/shm)
#
# A 5,000-file instance is laid out as a real one: 100 nodes, each with its
# params, state and 24 runs (run.yaml + log.txt). Index entries are written
# once per batch (see InstanceStore.flushIndex), as flowdir does; the last
# column is the same commit with the index written after every commit.
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
dir=${1:-/dev/shm}
history_big=${HISTORY:-100000}
bench=$(bash scripts/release-build.sh --product flowdir-bench)/flowdir-bench
echo "instances in $dir ($(df -T "$dir" | awk 'NR==2 {print $2}'))"
printf '%-7s %-8s %10s %10s %16s\n' files history median_ms p90_ms median+index_ms
# Short histories first: removing a 100,000-commit instance (~500k files)
# keeps the kernel busy for a while, which would only measure that.
for history in 10 "$history_big"; do
  for files in 50 5000; do
    sleep 2
    line=$(FLOWDIR_BENCH_DIR=$dir "$bench" commit-timing --files "$files" --history "$history" --samples 500)
    flush=$(FLOWDIR_BENCH_DIR=$dir "$bench" commit-timing --files "$files" --history 10 --samples 300 --flush-index-each)
    median=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' <<<"$line")
    p90=$(sed -n 's/.*p90_ms=\([0-9.]*\).*/\1/p' <<<"$line")
    fmedian=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' <<<"$flush")
    printf '%-7s %-8s %10s %10s %16s\n' "$files" "$history" "$median" "$p90" "$fmedian"
  done
done
