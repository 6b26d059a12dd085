#!/usr/bin/env python3
"""A/B of flowdir builds on one generated DAG (gen_dag.py), rounds
alternated (ABBA…) so that the VM's slow and quiet stretches fall on both
alike: median wall time and CPU (flowdir and its jobs) of each.

  full run (default): `flowdir new` then a timed `flowdir run`, each round;
  --noop: a timed `flowdir run` on an instance each build already finished;
  --make: `make -j2` on the DAG's Makefile in each round too, and each
          build's median of its rounds' ratios to it (the target's measure).

usage: ab.py [--noop] [--make] [--rounds N] DAG_DIR FLOWDIR...
   e.g. python3 Benchmarks/gen_dag.py 1000 /dev/shm/dag
        python3 Benchmarks/ab.py --noop --rounds 40 /dev/shm/dag /tmp/flowdir-old .build/release/flowdir
"""
import os, resource, shutil, statistics, subprocess, sys, time

args = sys.argv[1:]
noop = "--noop" in args
against_make = "--make" in args
rounds = 20
if "--rounds" in args:
    i = args.index("--rounds")
    rounds = int(args[i + 1])
    del args[i:i + 2]
args = [a for a in args if a not in ("--noop", "--make")]
if len(args) < 2:
    sys.exit(__doc__)
dag, builds = args[0], [os.path.abspath(b) for b in args[1:]]
os.chdir(dag)


def run(argv):
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)


def instance(i):
    return "ab-inst-%d" % i


if noop:
    for i, b in enumerate(builds):
        shutil.rmtree(instance(i), ignore_errors=True)
        run([b, "new", "dag.yaml", instance(i)])
        run([b, "run", instance(i)])

figures = {b: [] for b in builds}
make_walls = []
MAKE = (-1, "make")
for r in range(rounds):
    order = list(enumerate(builds)) + ([MAKE] if against_make else [])
    for i, b in (order if r % 2 == 0 else order[::-1]):
        if (i, b) == MAKE:
            shutil.rmtree("out", ignore_errors=True)
            start = time.perf_counter()
            run(["make", "-j2", "-s"])
            make_walls.append(time.perf_counter() - start)
            continue
        if not noop:
            shutil.rmtree(instance(i), ignore_errors=True)
            run([b, "new", "dag.yaml", instance(i)])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run([b, "run", instance(i)])
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        figures[b].append((wall, cpu))

for i, b in enumerate(builds):
    shutil.rmtree(instance(i), ignore_errors=True)
    walls = [w for w, _ in figures[b]]
    cpus = [c for _, c in figures[b]]
    unit, scale = ("ms", 1000) if noop else ("s", 1)
    print("%-40s wall median %.*f %s  CPU median %.*f %s  (%d rounds, %s)" % (
        b, 1 if noop else 3, statistics.median(walls) * scale, unit,
        1 if noop else 3, statistics.median(cpus) * scale, unit, rounds, "no-op run" if noop else "full run"))
    if make_walls:
        print("%-40s / make -j2: median of the rounds' ratios %.3fx" % (b, statistics.median(w / m for w, m in zip(walls, make_walls))))
if make_walls:
    print("%-40s wall median %.3f s" % ("make -j2", statistics.median(make_walls)))
