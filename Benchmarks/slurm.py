#!/usr/bin/env python3
"""Many Slurm jobs waiting in the queue: what flowdir asks of the controller, and what it costs.

One instance with N independent run.slurm nodes (each `sleep` for long, one
CPU) is run by `flowdir run`; on a small cluster most of them stay pending.
Once every job has its Slurm id, flowdir is watched for a window: the
squeue/scontrol/sbatch calls it makes (counted by wrappers put first on its
PATH) and its CPU time and RSS (from /proc). Then every job is cancelled.
Run it for a few N to see that the squeue rate follows the poll interval,
not the number of jobs.

Needs a running Slurm (scripts/slurm-local.sh) and a built flowdir.
usage: slurm.py [--jobs 20,200] [--poll 10] [--window 120] [--flowdir BIN]
"""
import argparse, glob, os, re, shutil, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--jobs", default="20,200", help="comma-separated job counts, one measurement each")
ap.add_argument("--poll", type=float, default=10, help="slurm.pollInterval, seconds")
ap.add_argument("--window", type=float, default=120, help="seconds to watch once every job is queued")
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../.build/release/flowdir"))
a = ap.parse_args()
fd = os.path.abspath(a.flowdir)
tick = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick  # utime, stime


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def calls(log):
    """The times of each call a wrapper logged."""
    try:
        return [float(t) for t in open(log).read().split()]
    except FileNotFoundError:
        return []


def measure(n):
    work = tempfile.mkdtemp(prefix="flowdir-slurmbench-")
    bin_ = work + "/bin"
    os.makedirs(bin_)
    for cmd in ("squeue", "scontrol", "sbatch"):
        real = shutil.which(cmd)
        if not real:
            sys.exit(f"{cmd} is not on PATH: start Slurm with scripts/slurm-local.sh")
        with open(f"{bin_}/{cmd}", "w") as f:
            f.write(f"#!/bin/sh\ndate +%s.%N >> {work}/{cmd}.calls\nexec {real} \"$@\"\n")
        os.chmod(f"{bin_}/{cmd}", 0o755)
    os.makedirs(work + "/wf/tools")
    open(work + "/wf/tools/Wait.yaml", "w").write(
        "kind: Wait\nresources: remote\noutputs: { out: TextRef }\n"
        "run:\n  slurm:\n    command: [sh, -c, 'sleep 3600; echo done > \"$0\"', \"{outputs.out}\"]\n    cpus: 1\n    time: 2h\n")
    with open(work + "/wf/many.yaml", "w") as f:
        f.write("schema: app.workflow/v2\nname: Many queued\nnodes:\n")
        for i in range(n):
            f.write(f"  - {{ id: n{i}, kind: Wait }}\n")
        f.write(f"edges: []\noptions: {{ concurrency: {{ remote: {n} }} }}\n")
    open(work + "/config.yaml", "w").write(f"slurm: {{ pollInterval: {a.poll}s }}\nconcurrency: {{ remote: {n} }}\n")
    env = dict(os.environ, PATH=bin_ + ":" + os.environ["PATH"], XDG_CONFIG_HOME=work + "/nonexistent",
               XDG_STATE_HOME=work + "/state", FLOWDIR_CONFIG=work + "/config.yaml")
    inst = work + "/inst"
    subprocess.run([fd, "new", "wf/many.yaml", inst], env=env, cwd=work, check=True, capture_output=True)

    def job_ids():
        ids = []
        for path in glob.glob(inst + "/nodes/*/state.yaml"):
            m = re.search(r'^job: "?(\d+)', open(path).read(), re.M)
            if m:
                ids.append(m.group(1))
        return ids

    begin = time.time()
    p = subprocess.Popen([fd, "run", inst], env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=open(work + "/run.log", "w"))
    try:
        while len(job_ids()) < n:
            if p.poll() is not None:
                sys.exit(f"flowdir run ended early ({p.returncode}); see {work}/run.log")
            time.sleep(0.2)
        queued_after = time.time() - begin
        time.sleep(a.poll)  # the first polls after the last submission
        start, cpu0 = time.time(), cpu_seconds(p.pid)
        time.sleep(a.window)
        end, cpu1, rss = time.time(), cpu_seconds(p.pid), rss_mb(p.pid)
        squeue = [t for t in calls(work + "/squeue.calls") if start <= t < end]
        scontrol = [t for t in calls(work + "/scontrol.calls") if start <= t < end]
        states = subprocess.run(["squeue", "--noheader", "--format=%T", "--jobs=" + ",".join(job_ids())],
                                capture_output=True, text=True).stdout.split()
        minutes = (end - start) / 60
        print(f"jobs={n} poll={a.poll:g}s all-submitted-after={queued_after:.1f}s sbatch-calls={len(calls(work + '/sbatch.calls'))} "
              f"pending={states.count('PENDING')} running={states.count('RUNNING')} window={end - start:.0f}s "
              f"squeue-per-min={len(squeue) / minutes:.2f} scontrol-per-min={len(scontrol) / minutes:.2f} "
              f"cpu={100 * (cpu1 - cpu0) / (end - start):.3f}%-of-a-core rss={rss:.0f}MB", flush=True)
    finally:
        p.kill()
        p.wait()
        ids = job_ids()
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


for n in [int(x) for x in a.jobs.split(",")]:
    measure(n)
