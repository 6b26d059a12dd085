#!/usr/bin/env python3
"""Watcher figures (issue 6): latency from rename() of an answer into inbox/
to its commit, to the commit recording the downstream node runningLocal, and
to that node's job running its first instruction (date(1), exec'd with no
shell, reading the clock) (p50, p99); start-up time and RSS with many idle
instances; CPU used over an idle minute.

usage: watch.py FLOWDIR WORKDIR [DROPS] [IDLE_INSTANCES] [IDLE_SECONDS]
"""
import json, os, shutil, subprocess, sys, time

flowdir, work = sys.argv[1], sys.argv[2]
drops = int(sys.argv[3]) if len(sys.argv) > 3 else 200
idle = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
idle_seconds = int(sys.argv[5]) if len(sys.argv) > 5 else 60
env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent", FLOWDIR_CONFIG="", XDG_STATE_HOME=work + "/state")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work + "/wf/tools")
# The downstream job is date(1) itself, run with no shell: the time it prints
# (into the run's log) is its first instruction after exec.
with open(work + "/wf/tools/Stamp.yaml", "w") as f:
    f.write("""kind: Stamp
inputs: { image: ImageRef }
outputs: { out: TextRef? }
run:
  command: [date, "+%s.%N"]
""")

def template(path, n, name):
    with open(path, "w") as f:
        f.write(f"schema: app.workflow/v2\nname: {name}\nnodes:\n")
        for i in range(n):
            f.write(f"  - {{ id: p{i}, kind: UserAssetPicker, outputs: {{ image: ImageRef }} }}\n")
            f.write(f"  - {{ id: s{i}, kind: Stamp }}\n")
        f.write("edges:\n" + "".join(f"  - p{i}.image -> s{i}.image\n" for i in range(n)))

def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def start(root, log):
    p = subprocess.Popen([flowdir, "watch", root, "--json-logs", "--log-level", "debug"], env=env,
                         stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    return p

def wait_log(log, message, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for line in open(log):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("message") == message:
                return e
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for '{message}' in {log}")

# 1. Latency. Questions in batches of 50 pairs per instance keep each tree small.
root = work + "/root"
os.makedirs(root)
per = 50
instances = (drops + per - 1) // per
template(work + "/wf/t.yaml", per, "Latency")
for k in range(instances):
    subprocess.run([flowdir, "new", work + "/wf/t.yaml", f"{root}/i{k}"], env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([flowdir, "run", f"{root}/i{k}"], env=env, stdout=subprocess.DEVNULL)
log = work + "/watch.log"
proc = start(root, log)
wait_log(log, "ready")
staged = work + "/staged"
os.makedirs(staged)
# A 64×64 mask-sized PNG: the figure is the watcher's own work, not zlib's on a big file.
subprocess.run(["convert", "-size", "64x64", "xc:gray", staged + "/photo.png"], check=True)
dropped = {}
for d in range(drops):
    k, i = divmod(d, per)
    src = f"{staged}/{d}.png"
    shutil.copy(staged + "/photo.png", src)
    t0 = time.time()
    os.rename(src, f"{root}/i{k}/inbox/p{i}.image.png")
    dropped[(k, i)] = t0
    time.sleep(0.05)
time.sleep(1.5)
commits, running = {}, {}
for line in open(log):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    s = e.get("summary", "")
    if e.get("message") == "commit" and s.startswith("Answer p"):
        i = int(s.split()[1][1:])
        commits.setdefault(i, []).append(float(e["t"]))
    # The commit that records the downstream node runningLocal (with the answer, or after it).
    if e.get("message") == "commit":
        for part in s.split("; "):
            if part.startswith("s") and part.endswith(" → runningLocal"):
                running.setdefault(int(part.split()[0][1:]), []).append(float(e["t"]))
# Which instance a commit belongs to is not in the line: answers go out in order, so match by time.
to_commit, to_running, to_start = [], [], []
def started(k, i):
    log = f"{root}/i{k}/nodes/s{i}/runs/1/log.txt"
    return [float(open(log).read())] if os.path.exists(log) else []
for (k, i), t0 in sorted(dropped.items(), key=lambda x: x[1]):
    c = [t for t in commits.get(i, []) if t >= t0]
    s = [t for t in started(k, i) if t >= t0]
    if c: to_commit.append((min(c) - t0) * 1000)
    r = [t for t in running.get(i, []) if t >= t0]
    if r: to_running.append((min(r) - t0) * 1000)
    if s: to_start.append((min(s) - t0) * 1000)
proc.terminate()
proc.wait()
print(f"answer file: {os.path.getsize(staged + '/photo.png')} bytes; questions per instance: {per}")
print(f"drops: {drops}  answered: {len(to_commit)}  downstream started: {len(to_start)}")
print(f"rename -> answer commit      p50 {percentile(to_commit, 50):7.2f} ms   p99 {percentile(to_commit, 99):7.2f} ms")
print(f"rename -> downstream running p50 {percentile(to_running, 50):7.2f} ms   p99 {percentile(to_running, 99):7.2f} ms   (its runningLocal committed; the job is launched just before)")
print(f"rename -> downstream start   p50 {percentile(to_start, 50):7.2f} ms   p99 {percentile(to_start, 99):7.2f} ms   (the job's first instruction: date(1) reads the clock)")

# 2. Start-up and memory with many idle instances (copies of one finished instance).
idle_root = work + "/idle"
os.makedirs(idle_root)
one = idle_root + "/i0"
template(work + "/wf/one.yaml", 1, "Idle")
subprocess.run([flowdir, "new", work + "/wf/one.yaml", one], env=env, check=True, stdout=subprocess.DEVNULL)
for k in range(1, idle):
    shutil.copytree(one, f"{idle_root}/i{k}", symlinks=True)
log2 = work + "/idle.log"
t0 = time.time()
proc = start(idle_root, log2)
ready = wait_log(log2, "ready")
startup = float(ready["t"]) - t0
def status(pid):
    fields = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status"))
    return fields["VmRSS"].strip()
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
# Instances opened at start stay open 1.5 s after their last event; let them close first.
time.sleep(5)
rss = status(proc.pid)
c0 = cpu(proc.pid)
time.sleep(idle_seconds)
c1 = cpu(proc.pid)
proc.terminate()
proc.wait()
print(f"{idle} idle instances: start-up to ready {startup * 1000:.0f} ms, RSS {rss} (5 s after)")
print(f"CPU over {idle_seconds} s idle: {c1 - c0:.3f} s")
