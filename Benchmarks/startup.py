#!/usr/bin/env python3
"""Start-up of flowdir builds, alternated (ABBA…) so that the machine's
busy and quiet stretches fall on each build alike: `flowdir --version`, and
a no-op `flowdir run` of a small finished instance (gen_dag.py's 10 steps).
Prints each build's median wall time with its 10th–90th percentiles, and
the median of the rounds' ratios to the first build (the figure to compare:
the same rounds, so load that hits both cancels out).

usage: startup.py [--runs N] [--dir DIR] OLD NEW...
   e.g. python3 Benchmarks/startup.py --runs 50 /tmp/flowdir-old .build/release/flowdir
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

args = sys.argv[1:]
runs = 50
base = "/dev/shm" if os.path.isdir("/dev/shm") else None
for flag in ("--runs", "--dir"):
    if flag in args:
        i = args.index(flag)
        if flag == "--runs":
            runs = int(args[i + 1])
        else:
            base = args[i + 1]
        del args[i:i + 2]
if len(args) < 2:
    sys.exit(__doc__)
builds = [os.path.abspath(b) for b in args]
here = os.path.dirname(os.path.abspath(__file__))
work = tempfile.mkdtemp(prefix="flowdir-startup-", dir=base)


def run(argv):
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=work)


def timed(argv):
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, cwd=work)
    return time.perf_counter() - start


try:
    run([sys.executable, os.path.join(here, "gen_dag.py"), "10", work])
    # Each build its own instance, finished once, so every timed run is a no-op.
    for i, b in enumerate(builds):
        run([b, "new", "dag.yaml", "inst-%d" % i])
        run([b, "run", "inst-%d" % i])
    cases = {
        "--version": lambda i, b: [b, "--version"],
        "no-op run": lambda i, b: [b, "run", "inst-%d" % i],
    }
    for name, argv in cases.items():
        for i, b in enumerate(builds):  # a warm page cache for every build
            timed(argv(i, b))
        walls = {b: [] for b in builds}
        order = list(enumerate(builds))
        for r in range(runs):
            for i, b in (order if r % 2 == 0 else order[::-1]):
                walls[b].append(timed(argv(i, b)))
        first = walls[builds[0]]
        for b in builds:
            w = sorted(walls[b])
            deciles = statistics.quantiles(w, n=10)
            ratio = statistics.median(x / y for x, y in zip(walls[b], first))
            print("%-10s %-44s median %6.2f ms  (p10 %.2f, p90 %.2f)  ratio to first %.3f  (%d runs)" % (
                name, b, statistics.median(w) * 1000, deciles[0] * 1000, deciles[-1] * 1000, ratio, runs))
finally:
    shutil.rmtree(work, ignore_errors=True)
