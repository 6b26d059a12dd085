#!/usr/bin/env bash
# Times `flowdir check` on generated templates of 1,000 and 10,000 nodes
# (YAML and JSON) with a release build. Target: ≤ 300 ms for 10,000 nodes.
#
#   bash Benchmarks/check.sh [RUNS]
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
runs=${1:-7}
bin=$(bash scripts/release-build.sh --product flowdir)/flowdir
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r Benchmarks/tools "$work/tools"
printf '%-8s %-5s %10s %10s %10s\n' nodes fmt bytes median_ms min_ms
for n in 1000 10000; do
  for fmt in yaml json; do
    file="$work/gen-$n.$fmt"
    python3 Benchmarks/gen_template.py "$n" "$fmt" "$file"
    "$bin" check -q "$file" >/dev/null   # must be valid; also warms the page cache
    times=()
    for _ in $(seq "$runs"); do
      start=$(date +%s%N)
      "$bin" check -q "$file" >/dev/null
      end=$(date +%s%N)
      times+=($(( (end - start) / 1000 )))
    done
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    median=${sorted[$(( runs / 2 ))]}
    printf '%-8s %-5s %10s %10.1f %10.1f\n' "$n" "$fmt" "$(stat -c %s "$file")" \
      "$(echo "$median / 1000" | bc -l)" "$(echo "${sorted[0]} / 1000" | bc -l)"
  done
done
