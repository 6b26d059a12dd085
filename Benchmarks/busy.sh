#!/usr/bin/env bash
# `flowdir run` on a machine busy with other work: the generated DAG of
# engine.sh (200 steps by default) run while HOGS busy loops (default 3,
# more than this VM's 2 cores) hold the CPU, against make -j2 beside the
# same loops, and both on the idle machine. flowdir's share of the CPU
# should be what make's is: a thread of its own at idle priority (SCHED_IDLE,
# once used for commits) got almost none, and a 200-step run took 16-23 s
# here, where it now takes 0.4 s. Rounds alternate; medians are printed.
#
#   [ROUNDS=5] [HOGS=3] bash Benchmarks/busy.sh [N]
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
source Benchmarks/rounds.sh
n=${1:-200}
rounds=${ROUNDS:-5}
hogs=${HOGS:-3}
bin=$(bash scripts/release-build.sh --product flowdir)
flowdir=$bin/flowdir
work=$(mktemp -d)
pids=()
stop_hogs() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
trap 'stop_hogs; rm -rf "$work"' EXIT
python3 Benchmarks/gen_dag.py "$n" "$work" >/dev/null
cd "$work"
fl=(); mk=(); fl_busy=(); mk_busy=()
for r in $(seq "$rounds"); do
  aside inst out && "$flowdir" new dag.yaml inst >/dev/null
  fl+=("$(secs "$flowdir" run inst)")
  aside out && mk+=("$(secs make -j2 -s)")
  for _ in $(seq "$hogs"); do sh -c 'while :; do :; done' & pids+=($!); done
  sleep 0.5
  aside inst out && "$flowdir" new dag.yaml inst >/dev/null
  if (( r % 2 )); then
    fl_busy+=("$(secs "$flowdir" run inst)"); aside out; mk_busy+=("$(secs make -j2 -s)")
  else
    mk_busy+=("$(secs make -j2 -s)"); fl_busy+=("$(secs "$flowdir" run inst)")
  fi
  stop_hogs
done
echo "nodes=$n  busy loops=$hogs  rounds=$rounds"
echo "idle machine:  flowdir run ${fl[*]} s (median $(median "${fl[@]}"));  make -j2 ${mk[*]} s (median $(median "${mk[@]}"))"
echo "busy machine:  flowdir run ${fl_busy[*]} s (median $(median "${fl_busy[@]}"));  make -j2 ${mk_busy[*]} s (median $(median "${mk_busy[@]}"))"
echo "slowdown when busy: flowdir $(echo "scale=2; $(median "${fl_busy[@]}") / $(median "${fl[@]}")" | bc)x, make $(echo "scale=2; $(median "${mk_busy[@]}") / $(median "${mk[@]}")" | bc)x"
