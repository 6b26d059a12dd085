#!/usr/bin/env bash
# Where `flowdir run` spends its time against make -j2, in three phases, on
# the same generated DAG as engine.sh: from the command's exec to its first
# job's exec (start-up: loading, checking, first commit), from there to the
# last job's exit (the jobs: what both spend per job), and from there to the
# command's exit (the last commits). Read from the kernel's own exec and
# exit events (perf's sched tracepoints), so the commands run as they are.
# Rounds alternate flowdir and make; medians are printed.
#
#   [ROUNDS=9] bash Benchmarks/phases.sh [N]      (needs perf: apt-get install -y linux-perf)
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
source Benchmarks/rounds.sh
n=${1:-1000}
rounds=${ROUNDS:-9}
command -v perf >/dev/null || { echo "phases.sh needs perf (apt-get install -y linux-perf)" >&2; exit 1; }
bin=$(bash scripts/release-build.sh --product flowdir)
flowdir=$bin/flowdir
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 Benchmarks/gen_dag.py "$n" "$work" >/dev/null
cd "$work"
# Prints "start jobs end" in ms for one command, whose jobs are `touch`.
phases() {
  perf record -q -e sched:sched_process_exec,sched:sched_process_exit -o "$work/p.data" -- "$@" >/dev/null 2>&1
  perf script -i "$work/p.data" -F comm,time,event 2>/dev/null | awk '
    { t = $(NF-1) + 0; if (!s) s = t; e = t }
    /sched_process_exec/ && /touch/ { if (!f) f = t }
    /sched_process_exit/ && /touch/ { l = t }
    END { printf "%.1f %.1f %.1f\n", (f - s) * 1000, (l - f) * 1000, (e - l) * 1000 }'
}
fs=(); fj=(); fe=(); ms=(); mj=(); me=()
for r in $(seq "$rounds"); do
  aside inst out && "$flowdir" new dag.yaml inst >/dev/null
  read -r a b c < <(phases "$flowdir" run inst); fs+=("$a"); fj+=("$b"); fe+=("$c")
  read -r a b c < <(phases make -j2 -s); ms+=("$a"); mj+=("$b"); me+=("$c")
done
printf '%-12s %10s %10s %10s %10s   (ms, medians of %d)\n' "" "start-up" "jobs" "after" "total" "$rounds"
for who in flowdir make; do
  if [ $who = flowdir ]; then s=$(median "${fs[@]}"); j=$(median "${fj[@]}"); e=$(median "${fe[@]}")
  else s=$(median "${ms[@]}"); j=$(median "${mj[@]}"); e=$(median "${me[@]}"); fi
  printf '%-12s %10s %10s %10s %10s\n' "$who" "$s" "$j" "$e" "$(echo "$s + $j + $e" | bc)"
done
echo "jobs phase, flowdir / make = $(echo "scale=3; $(median "${fj[@]}") / $(median "${mj[@]}")" | bc)x"
echo "flowdir start-up, each round: ${fs[*]}"
echo "flowdir after the last job, each round: ${fe[*]}"
