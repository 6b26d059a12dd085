#!/usr/bin/env python3
"""The watcher with many remote jobs in flight: N jobs of 60-120 s on a
`flowdir jobserver` (its model a tool that sleeps), polled every 10 s.

Reports, over a steady window while every job runs: the watcher's CPU (% of
one core, from /proc/PID/stat), its RSS, and the requests per minute it
sent (the job server's access log); then the time until all succeeded.

usage: remote.py [--jobs 1000] [--window 60] [--flowdir BIN]
  (default BIN: a release build, `scripts/release-build.sh`)
"""
import argparse, os, random, re, shutil, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--jobs", type=int, default=1000)
ap.add_argument("--window", type=float, default=60, help="seconds of steady state measured")
ap.add_argument("--min", type=float, default=60)
ap.add_argument("--max", type=float, default=120)
ap.add_argument("--poll", default="10s")
ap.add_argument("--sync-wait", help="the endpoint's syncWait (default: flowdir's, 25s)")
ap.add_argument("--flowdir")
ap.add_argument("--keep")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fd = a.flowdir or subprocess.run(["bash", root + "/scripts/release-build.sh", "--product", "flowdir"], check=True,
                                 capture_output=True, text=True).stdout.strip() + "/flowdir"
work = a.keep or tempfile.mkdtemp(prefix="flowdir-remote-bench-")
for d in ("server/tools", "wf/tools", "root"):
    os.makedirs(f"{work}/{d}", exist_ok=True)
rng = random.Random(1)

open(f"{work}/server/tools/Sleep.yaml", "w").write(
    "kind: Sleep\noutputs: { out: TextRef }\nparams: { seconds: { type: number, default: 60 } }\n"
    "run:\n  command: [sh, -c, 'sleep \"$1\"; echo done > \"$0\"', \"{outputs.out}\", \"{params.seconds}\"]\n")
open(f"{work}/wf/tools/Gpu.yaml", "w").write(
    "kind: Gpu\nresources: remote\noutputs: { out: TextRef }\nparams: { seconds: { type: number, default: 60 } }\n"
    "run:\n  http:\n    endpoint: gpu\n    model: tools/Sleep\n    input: { seconds: \"{params.seconds}\" }\n    outputs: { out: output }\n")
with open(f"{work}/wf/many.yaml", "w") as f:
    f.write("schema: app.workflow/v2\nname: Many remote jobs\nnodes:\n")
    for i in range(a.jobs):
        f.write(f"  - {{ id: g{i}, kind: Gpu, params: {{ seconds: {rng.uniform(a.min, a.max):.1f} }} }}\n")
    f.write(f"options: {{ concurrency: {{ remote: {a.jobs} }} }}\n")

out = open(f"{work}/jobserver.out", "w")
server = subprocess.Popen([fd, "jobserver", "--port", "0", "--dir", f"{work}/jobserver", "--tools", f"{work}/server/tools"],
                          stdout=out, stderr=out, start_new_session=True)
port = None
for _ in range(300):
    m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", open(f"{work}/jobserver.out").read())
    if m:
        port = int(m.group(1))
        break
    time.sleep(0.05)
open(f"{work}/config.yaml", "w").write(
    f"concurrency: {{ remote: {a.jobs} }}\n"
    f"endpoints:\n  gpu: {{ url: http://127.0.0.1:{port}/v1, pollInterval: {a.poll}, maxRequestsPerMinute: 3000{', syncWait: ' + a.sync_wait if a.sync_wait else ''} }}\n")
# The job server's token: it keeps one in its folder (mode 0600), made at its
# first start. A build from before tokens (to compare with) has none.
env = dict(os.environ, XDG_CONFIG_HOME=f"{work}/nonexistent", XDG_STATE_HOME=f"{work}/state", FLOWDIR_CONFIG=f"{work}/config.yaml")
if os.path.exists(f"{work}/jobserver/token"):
    env["FLOWDIR_TOKEN_GPU"] = open(f"{work}/jobserver/token").read().strip()
subprocess.run([fd, "new", "wf/many.yaml", "root/many"], cwd=work, env=env, check=True, capture_output=True)
inst = f"{work}/root/many"


def states():
    counts = {}
    for i in range(a.jobs):
        try:
            s = next(l for l in open(f"{inst}/nodes/g{i}/state.yaml") if l.startswith("state:")).split(":", 1)[1].strip()
        except (FileNotFoundError, StopIteration):
            s = "?"
        counts[s] = counts.get(s, 0) + 1
    return counts


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


def requests(since, until):
    """Status checks, submits, downloads and anything else the watcher sent in [since, until)."""
    n = {"status": 0, "submit": 0, "download": 0, "other": 0}
    for line in open(f"{work}/jobserver/access.log"):
        f = line.split()
        if len(f) < 5 or not since <= float(f[1]) < until:
            continue
        kind = ("status" if f[2] == "GET" and f[3].startswith("/v1/predictions") else
                "submit" if f[2] == "POST" and f[3].endswith("/predictions") else
                "download" if f[2] == "GET" and f[3].startswith("/v1/files/") else "other")
        n[kind] += 1
    return n


log = open(f"{work}/watch.log", "w")
start = time.time()
watch = subprocess.Popen([fd, "watch", f"{work}/root"], cwd=work, env=env, stdout=log, stderr=log)
try:
    # Every job sent and running.
    while time.time() - start < 300:
        c = states()
        if c.get("runningRemote", 0) == a.jobs:
            break
        time.sleep(1)
    ramp = time.time() - start
    print(f"jobs={a.jobs} all running after {ramp:.1f}s ({c})", flush=True)
    time.sleep(2)
    # Steady: every job running, none finished yet (the first ends `min` seconds after it was sent).
    window = max(5.0, min(a.window, a.min - (time.time() - start) - 2))
    t0, c0 = time.time(), cpu(watch.pid)
    time.sleep(window)
    t1, c1 = time.time(), cpu(watch.pid)
    r = requests(t0, t1)
    minutes = (t1 - t0) / 60
    print(f"steady {t1 - t0:.0f}s, {a.jobs} jobs running: watcher CPU {100 * (c1 - c0) / (t1 - t0):.2f}% of one core, "
          f"RSS {rss(watch.pid):.1f} MB, requests/min {sum(r.values()) / minutes:.1f} "
          f"(status {r['status'] / minutes:.1f}, other {(r['submit'] + r['download'] + r['other']) / minutes:.1f})", flush=True)
    while time.time() - start < 600:
        c = states()
        if c.get("succeeded", 0) == a.jobs:
            break
        time.sleep(1)
    end = time.time()
    total = cpu(watch.pid)
    r = requests(start, end)
    print(f"all {c.get('succeeded', 0)} succeeded after {end - start:.1f}s; watcher CPU in all {total:.1f}s "
          f"({100 * total / (end - start):.2f}% of one core over the whole run), RSS {rss(watch.pid):.1f} MB; "
          f"requests: {r['submit']} submits, {r['status']} status checks, {r['download']} downloads, {r['other']} other", flush=True)
finally:
    watch.send_signal(signal.SIGTERM)
    watch.wait()
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
