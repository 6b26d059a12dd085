#!/usr/bin/env bash
# flowdir run on a generated 1,000-node DAG of no-op steps (each `touch`es its
# output), with full history (two commits a step), against make -j2 on the
# equivalent Makefile and snakemake -j2 on the equivalent Snakefile.
# Targets: ≤ 1.5× make; ≥ 20× faster than snakemake; a no-op `flowdir run`
# on the finished instance ≤ 50 ms.
#
#   [ROUNDS=5] [SNAKE_ROUNDS=3] bash Benchmarks/engine.sh [N]   (snakemake is installed with pip if missing)
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
source Benchmarks/rounds.sh
n=${1:-1000}
bin=$(bash scripts/release-build.sh --product flowdir)
bash scripts/release-build.sh --product flowdir-bench >/dev/null
flowdir=$bin/flowdir
bench=$bin/flowdir-bench
command -v snakemake >/dev/null || pip install --quiet snakemake >/dev/null 2>&1 || echo "(snakemake not installable; skipped)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 Benchmarks/gen_dag.py "$n" "$work"
cd "$work"
fs=$(filesystem)
# This VM's timings vary by ±20% from run to run: flowdir and make are
# each timed ROUNDS times from scratch (median reported; all printed).
rounds=${ROUNDS:-5}
fl=(); mk=(); ratios=(); sp=(); ss=(); raw=()
for r in $(seq "$rounds"); do
  aside inst out spawned && mkdir spawned
  "$flowdir" new dag.yaml inst >/dev/null
  # flowdir and make back to back, in turn first: a round's pair shares the
  # VM's stretch, and its ratio (reported as well) does not drift with it.
  if (( r % 2 )); then
    fl+=("$(secs "$flowdir" run inst)"); mk+=("$(secs make -j2 -s)")
  else
    mk+=("$(secs make -j2 -s)"); fl+=("$(secs "$flowdir" run inst)")
  fi
  ratios+=("$(echo "scale=3; ${fl[-1]} / ${mk[-1]}" | bc)")
  # The floor under flowdir: the same N `touch`es, 2 at a time, through
  # its runner alone, with no engine, state or git; and through
  # swift-subprocess, which flowdir's runner replaced.
  sp+=("$(secs "$bench" spawn-timing --count "$n" --parallel 2 --touch "$work/spawned")")
  aside spawned && mkdir spawned
  ss+=("$(secs "$bench" spawn-timing --count "$n" --parallel 2 --touch "$work/spawned" --swift-subprocess)")
  # And by bare posix_spawn + waitpid on two threads: spawning without swift-subprocess.
  aside spawned && mkdir spawned
  raw+=("$(secs "$bench" spawn-timing --count "$n" --parallel 2 --touch "$work/spawned" --raw)")
done
t_flowdir=$(median "${fl[@]}"); t_make=$(median "${mk[@]}"); t_spawn=$(median "${sp[@]}"); t_ss=$(median "${ss[@]}"); t_raw=$(median "${raw[@]}")
t_check=$(secs "$flowdir" run inst)   # full re-evaluation; notes that nothing is to do
t_noop=$(secs "$flowdir" run inst)    # answered from stat data
t_snake="n/a"; sn=()
# snakemake's own time varies by a quarter from run to run (16-24 s seen): the median of a few.
if command -v snakemake >/dev/null; then
  for r in $(seq "${SNAKE_ROUNDS:-3}"); do aside out .snakemake; sn+=("$(secs snakemake -j2 --quiet all)"); done
  t_snake=$(median "${sn[@]}")
fi
echo "flowdir run: ${fl[*]} s;  make -j2: ${mk[*]} s;  runner alone: ${sp[*]} s;  swift-subprocess: ${ss[*]} s;  bare posix_spawn: ${raw[*]} s  (median of $rounds below)"
commits=$(git -C inst rev-list --count HEAD)
states=$("$flowdir" ls --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['steps'])")
echo "nodes=$n  flowdir steps done: $states  commits: $commits  file system: $fs ($work)"
printf '%-34s %8s s\n' "flowdir run" "$t_flowdir" "flowdir run (re-evaluate all)" "$t_check" \
  "flowdir run (no-op, up to date)" "$t_noop" "make -j2" "$t_make" "runner alone (flowdir's)" "$t_spawn" "runner alone (swift-subprocess)" "$t_ss" \
  "bare posix_spawn + waitpid" "$t_raw" \
  "snakemake -j2" "$t_snake"
echo "flowdir / make      = $(echo "scale=3; $t_flowdir / $t_make" | bc)x   (ratio of the medians; each round's: ${ratios[*]}, median $(median "${ratios[@]}")x)"
echo "runner alone / make = $(echo "scale=2; $t_spawn / $t_make" | bc)x   (flowdir's runner; through swift-subprocess: $(echo "scale=2; $t_ss / $t_make" | bc)x)"
[ "$t_snake" != "n/a" ] && echo "snakemake / flowdir = $(echo "scale=1; $t_snake / $t_flowdir" | bc)x   (snakemake: ${sn[*]} s, median)"
true
