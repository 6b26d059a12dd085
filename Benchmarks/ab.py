#!/usr/bin/env python3
"""A/B of flowdir builds on one generated DAG (gen_dag.py), rounds
alternated (ABBA…) so that the VM's slow and quiet stretches fall on both
alike: median wall time and CPU of each, the command's own and its jobs'
apart (with --make, make's too: what each adds to the same jobs).

  full run (default): `flowdir new` then a timed `flowdir run`, each round;
  --noop: a timed `flowdir run` on an instance each build already finished;
  --make: `make -j2` on the DAG's Makefile in each round too, and each
          build's median of its rounds' ratios to it (the target's measure).

usage: ab.py [--noop] [--make] [--rounds N] DAG_DIR FLOWDIR...
   e.g. python3 Benchmarks/gen_dag.py 1000 /dev/shm/dag
        python3 Benchmarks/ab.py --noop --rounds 40 /dev/shm/dag /tmp/flowdir-old .build/release/flowdir
"""
import os, shutil, statistics, subprocess, sys, time

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


TICK = os.sysconf("SC_CLK_TCK")


def timed(argv):
    """Wall time, and the CPU of the command itself and of the jobs it
    waited for, read from its /proc stat while it is a zombie (not yet
    reaped), so the two are apart: (wall, own, jobs)."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.perf_counter() - start
    with open("/proc/%d/stat" % p.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) / TICK for x in fields[11:15])
    if p.wait() != 0:
        sys.exit("%s exited %d" % (" ".join(argv), p.returncode))
    return wall, utime + stime, cutime + cstime


ASIDE = ".ab-old"


def aside(path):
    """Moves a round's leftovers aside (removed at the end), not deleted
    between rounds: an ext4 without a journal (this VM's /tmp) does not
    reuse an inode freed in the last minute or more, and files made after
    a large delete wait on a scan past the freed ones (see rounds.sh)."""
    if os.path.lexists(path):
        os.makedirs(ASIDE, exist_ok=True)
        os.rename(path, os.path.join(ASIDE, "%s.%d" % (path, time.monotonic_ns())))


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
            aside("out")
            make_walls.append(timed(["make", "-j2", "-s"]))
            continue
        if not noop:
            aside(instance(i))
            run([b, "new", "dag.yaml", instance(i)])
        figures[b].append(timed([b, "run", instance(i)]))


def cpu_figures(runs, unit, scale, digits):
    """CPU medians: the whole, and the command's own and its jobs' apart
    (in clock ticks of 10 ms: meaningful over many rounds, not one)."""
    med = lambda xs: statistics.median(xs) * scale
    return "CPU median %.*f %s (own %.*f, jobs %.*f)" % (
        digits, med([o + j for _, o, j in runs]), unit, digits, med([o for _, o, _ in runs]), digits, med([j for _, _, j in runs]))


shutil.rmtree(ASIDE, ignore_errors=True)
for i, b in enumerate(builds):
    shutil.rmtree(instance(i), ignore_errors=True)
    walls = [w for w, _, _ in figures[b]]
    unit, scale, digits = ("ms", 1000, 1) if noop else ("s", 1, 3)
    print("%-40s wall median %.*f %s  %s  (%d rounds, %s)" % (
        b, digits, statistics.median(walls) * scale, unit, cpu_figures(figures[b], unit, scale, digits),
        rounds, "no-op run" if noop else "full run"))
    if make_walls:
        print("%-40s / make -j2: median of the rounds' ratios %.3fx" % (
            b, statistics.median(w / m for w, (m, _, _) in zip(walls, make_walls))))
if make_walls:
    print("%-40s wall median %.3f s  %s" % ("make -j2", statistics.median(w for w, _, _ in make_walls),
                                             cpu_figures(make_walls, "s", 1, 3)))
