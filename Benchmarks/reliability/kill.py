#!/usr/bin/env python3
"""kill -9 of `flowdir run` or `flowdir watch` at random moments.

Every execution of a tool is counted by the tool itself, in a file outside
the instance (`node.run` from its work folder's name). After each kill,
flowdir is started again; when the workflow is done, each counted execution
must be in the history (`runs/<n>/run.yaml` in HEAD), no run number may
have run twice, git fsck --strict must be clean and no node stuck.

usage: kill.py [--mode run|watch] [--kills N] [--nodes N] [--seed S] [--flowdir BIN] [--keep DIR]
Prints one line of figures; exits 1 if any check failed.
"""
import os as _os, sys as _sys
_sys.path.insert(0, _os.path.dirname(_os.path.abspath(__file__)))
import argparse, collections, os, random, shutil, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["run", "watch"], default="run")
ap.add_argument("--kills", type=int, default=50, help="kill -9 points in all")
ap.add_argument("--nodes", type=int, default=40, help="nodes of each workflow")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../../.build/debug/flowdir"))
ap.add_argument("--keep", help="work here and keep it")
a = ap.parse_args()
rng = random.Random(a.seed)
fd = os.path.abspath(a.flowdir)
work = a.keep or tempfile.mkdtemp(prefix="flowdir-kill-")
os.makedirs(work, exist_ok=True)
counter = os.path.join(work, "executions")
env = dict(os.environ, XDG_CONFIG_HOME=work + "/config", XDG_STATE_HOME=work + "/state", FLOWDIR_CONFIG="")

# A DAG (chains and fans), each step counting itself, then writing its output.
os.makedirs(work + "/wf/tools", exist_ok=True)
with open(work + "/wf/tools/Count.yaml", "w") as f:
    f.write("kind: Count\ninputs: { a: TextRef?, b: TextRef? }\noutputs: { out: TextRef }\n"
            "params: { sleep: { type: number, default: 0.02 } }\n"
            "run:\n  command: [sh, -c, 'echo \"$1\" >> \"$2\"; sleep \"$3\"; echo done > \"$0\"', "
            "\"{outputs.out}\", \"{run.dir}\", \"" + counter + "\", \"{params.sleep}\"]\n")
with open(work + "/wf/dag.yaml", "w") as f:
    f.write("schema: app.workflow/v2\nname: Kill\nnodes:\n")
    edges = []
    for i in range(a.nodes):
        deps = [] if i < 4 else rng.sample(range(max(0, i - 8), i), k=min(2, i))
        ports = ", ".join(f"{p}: TextRef" for p, _ in zip("ab", deps))
        sleep = rng.choice([0, 0.01, 0.05, 0.2])
        f.write(f"  - {{ id: n{i}, kind: Count, params: {{ sleep: {sleep} }}" + (f", inputs: {{ {ports} }}" if deps else "") + " }\n")
        edges += [f"n{d}.out -> n{i}.{p}" for p, d in zip("ab", deps)]
    f.write("edges:\n" + "".join(f"  - {e}\n" for e in edges))
    f.write("options: { concurrency: { local: 2 } }\n")

def flowdir(*args, **kw):
    return subprocess.run([fd, *args], env=env, cwd=work, capture_output=True, text=True, **kw)

from common import state

def git(inst, *args):
    return subprocess.run(["git", "-C", inst, *args], capture_output=True, text=True)

def start_flowdir(inst):
    args = ["run", inst] if a.mode == "run" else ["watch", os.path.dirname(inst)]
    log = open(f"{work}/flowdir.log", "a")
    return subprocess.Popen([fd, *args], env=env, cwd=work, stdout=log, stderr=log)

def done(inst):
    return all(state(inst, f"n{i}") == "succeeded" for i in range(a.nodes))

kills = 0
instances = 0
problems = []
start = time.time()
while kills < a.kills:
    instances += 1
    inst = f"{work}/root/i{instances}"
    r = flowdir("new", "wf/dag.yaml", inst)
    if r.returncode != 0:
        sys.exit("new failed: " + r.stderr)
    while kills < a.kills and not done(inst):
        p = start_flowdir(inst)
        time.sleep(rng.uniform(0.0, 0.6 if a.mode == "run" else 0.9))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.wait()
    # The last start is left to finish: run ends by itself; a watcher is
    # stopped once it has started (taken up every instance, repairing what
    # the last kill left: until then git's index may lag HEAD, behind
    # flowdir's index.lock) and the workflow is done.
    readies = open(f"{work}/flowdir.log").read().count("] ready") if os.path.exists(f"{work}/flowdir.log") else 0
    p = start_flowdir(inst)
    deadline = time.time() + 120
    while time.time() < deadline and not done(inst) and p.poll() is None:
        time.sleep(0.1)
    if a.mode == "watch":
        while time.time() < deadline and (not done(inst) or open(f"{work}/flowdir.log").read().count("] ready") <= readies):
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
    p.wait()
    stuck = [f"n{i}" for i in range(a.nodes) if state(inst, f"n{i}") != "succeeded"]
    if stuck:
        # What the last flowdir said, so a failure here can be read without a rerun.
        tail = open(f"{work}/flowdir.log").read().strip().splitlines()[-3:] if os.path.exists(f"{work}/flowdir.log") else []
        problems.append(f"{inst}: not done: {stuck[:5]} ({state(inst, stuck[0])}); the last flowdir exited {p.returncode}: {tail}")
    fsck = git(inst, "fsck", "--strict", "--no-progress")
    bad = [l for l in fsck.stdout.splitlines() + fsck.stderr.splitlines() if not l.startswith("dangling")]
    if fsck.returncode != 0 or bad:
        problems.append(f"{inst}: fsck: {bad[:3]}")
    status = git(inst, "status", "--porcelain").stdout
    if status:
        problems.append(f"{inst}: git status not clean: {status.splitlines()[:3]}")

# Every execution counted (its work folder: <instance>/.flowdir/work/<node>.<run>)
# must be recorded in that instance's HEAD, and no run number may have run twice.
lines = open(counter).read().split() if os.path.exists(counter) else []
runs = collections.Counter(lines)
executions = len(lines)
twice = [k for k, v in runs.items() if v > 1]
unrecorded = []
trees = {}
for line in runs:
    inst, name = line.split("/.flowdir/work/")
    node, run = name.rsplit(".", 1)
    if inst not in trees:
        trees[inst] = set(git(inst, "ls-tree", "-r", "--name-only", "HEAD").stdout.split())
    if f"nodes/{node}/runs/{run}/run.yaml" not in trees[inst]:
        unrecorded.append(f"{os.path.basename(inst)}/{node}#{run}")
print(f"mode={a.mode} kills={kills} instances={instances} nodes={a.nodes} executions={executions} "
      f"unrecorded={len(unrecorded)} ran-twice={len(twice)} problems={len(problems)} seconds={time.time() - start:.0f}")
for p in problems[:10]:
    print("  " + p)
if unrecorded:
    print("  unrecorded executions: " + ", ".join(sorted(unrecorded)[:20]))
if not a.keep:
    shutil.rmtree(work, ignore_errors=True)
if twice:
    print("  run numbers that ran twice: " + ", ".join(sorted(twice)[:20]))
sys.exit(1 if problems or unrecorded or twice else 0)
