#!/usr/bin/env python3
"""Two machines, one workflow: random interleavings of run, answer, params
edit, sync, kill -9 and lease lapse on two clones of each instance.

Machine "laptop" and machine "gpu-box" are two clones (FLOWDIR_HOST tells
them apart) with a bare repository between them. At each step one machine
does one thing at random: `flowdir run` (killed with SIGKILL at a random
moment half the time), an answer to an open question, a params edit in the
file (as a person would), `flowdir sync`, or waits out the lease. When an
instance is done the next begins. Each job of the workflow's tool appends
its instance, node and run to a file outside the instances.

Afterwards, with final syncs: both clones and the bare repository pass
`git fsck --strict`, the clones agree on every node's state, no node ran
twice for one run, every params edit is in the shared history, no file has
conflict markers.

usage: synckill.py [--steps N] [--seed S] [--flowdir BIN] [--keep DIR]
"""
import argparse, collections, glob, os, random, re, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import state

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=200)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--lease", type=float, default=2.0, help="seconds a lease lasts")
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../../.build/debug/flowdir"))
ap.add_argument("--keep")
a = ap.parse_args()
rng = random.Random(a.seed)
fd = os.path.abspath(a.flowdir)
work = a.keep or tempfile.mkdtemp(prefix="flowdir-synckill-")
os.makedirs(work + "/wf/tools", exist_ok=True)
machines = ["laptop", "gpu-box"]
for m in machines:
    os.makedirs(f"{work}/{m}", exist_ok=True)
marks = work + "/jobs-ran"

open(work + "/wf/tools/Work.yaml", "w").write(
    "kind: Work\ninputs: { a: JSONRef?, b: TextRef? }\noutputs: { out: TextRef }\n"
    "params: { text: { type: string, default: x }, sleep: { type: number, default: 0.2 } }\n"
    "run:\n  command: [sh, -c, 'echo \"$FLOWDIR_HOST $(basename \"$FLOWDIR_INSTANCE\") $FLOWDIR_NODE $FLOWDIR_RUN\" >> \"$1\"; sleep \"$2\"; "
    "printf \"%s\" \"$3\" > \"$0\"', \"{outputs.out}\", \"" + marks + "\", \"{params.sleep}\", \"{params.text}\"]\n")
open(work + "/wf/flow.yaml", "w").write("""schema: app.workflow/v2
name: Two machines
nodes:
  - { id: q1, kind: Choice, outputs: { choice: JSONRef }, await: { type: choice, choices: [c1, c2, c3], default: c1 } }
  - { id: q2, kind: Choice, outputs: { choice: JSONRef }, await: { type: choice, choices: [c1, c2, c3], default: c1 } }
  - { id: w1, kind: Work, params: { sleep: 0.3 }, inputs: { a: JSONRef } }
  - { id: w2, kind: Work, params: { sleep: 0.1 }, inputs: { b: TextRef } }
  - { id: w3, kind: Work, params: { sleep: 0.4 }, inputs: { a: JSONRef } }
  - { id: w4, kind: Work, params: { sleep: 0.2 } }
edges: [q1.choice -> w1.a, w1.out -> w2.b, q2.choice -> w3.a]
""")
os.makedirs(work + "/config/flowdir", exist_ok=True)
open(work + "/config/flowdir/config.yaml", "w").write(f"sync: {{ lease: {a.lease}s }}\n")
base_env = dict(os.environ, XDG_CONFIG_HOME=work + "/config", XDG_STATE_HOME=work + "/state")


def flowdir(m, *args, timeout=120):
    seen_by_flowdir(m)
    return subprocess.run([fd, *args], env=dict(base_env, FLOWDIR_HOST=m), cwd=work, capture_output=True, text=True, timeout=timeout)


def path(m, name):
    return f"{work}/{m}/{name}"


problems, edits, counts = [], [], collections.Counter()
# A person's edit not yet seen by any flowdir on that machine: a later edit
# of the same file by the same person replaces it (that is theirs to do).
pending = {}


def seen_by_flowdir(m):
    for key in [k for k in pending if k[0] == m]:
        edits.append((key[1], key[2], pending.pop(key)))
instances = []


def new_instance(n):
    name = f"i{n}"
    hub = f"{work}/hub-{name}.git"
    subprocess.run(["git", "init", "--quiet", "--bare", hub], check=True)
    r = flowdir("laptop", "new", "wf/flow.yaml", path("laptop", name))
    if r.returncode != 0:
        sys.exit("new failed: " + r.stderr)
    subprocess.run(["git", "-C", path("laptop", name), "remote", "add", "origin", hub], check=True)
    if flowdir("laptop", "sync", path("laptop", name)).returncode != 0:
        sys.exit("first sync failed")
    r = flowdir("gpu-box", "clone", hub, path("gpu-box", name))
    if r.returncode != 0:
        sys.exit("clone failed: " + r.stderr)
    instances.append(name)
    return name


def done(name):
    return all(state(path(m, name), n) == "succeeded" for m in machines for n in ["q1", "q2", "w1", "w2", "w3", "w4"])


def step(name, i):
    m = rng.choice(machines)
    inst = path(m, name)
    op = rng.choices(["run", "answer", "edit", "sync", "lapse"], weights=[5, 3, 1, 4, 1])[0]
    counts[op] += 1
    if op == "run":
        seen_by_flowdir(m)
        p = subprocess.Popen([fd, "run", inst], env=dict(base_env, FLOWDIR_HOST=m), cwd=work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0.0, 0.5))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                counts["kill"] += 1
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            problems.append(f"{inst}: run did not end in 120 s")
    elif op == "answer":
        open_q = [q for q in ["q1", "q2"] if state(inst, q) == "awaitingUser"]
        if open_q:
            q = rng.choice(open_q)
            flowdir(m, "answer", f"{inst}/{q}", "--choice", rng.choice(["c1", "c2", "c3"]))
    elif op == "edit":
        node = rng.choice(["w1", "w2", "w3", "w4"])
        text = f"{m}-{name}-{i}"
        f = f"{inst}/nodes/{node}/params.yaml"
        body = open(f).read()
        body = re.sub(r"^text: .*$", f"text: {text}", body, flags=re.M) if re.search(r"^text:", body, re.M) else body + f"text: {text}\n"
        open(f, "w").write(body)
        pending[(m, name, node)] = text
        # An edited node that ran is blocked, "Params changed", until a person reruns it.
        if rng.random() < 0.8 and state(inst, node) in ("succeeded", "blocked"):
            flowdir(m, "rerun", inst, node)
    elif op == "sync":
        r = flowdir(m, "sync", inst)
        if r.returncode != 0:
            problems.append(f"{inst}: sync failed: {r.stderr.strip()[:300]}")
    elif op == "lapse":
        time.sleep(a.lease + 0.2)


def finish(name):
    """Final rounds: each machine answers, settles conflicts, reruns and syncs until both agree and all is done."""
    for _ in range(12):
        for m in machines:
            inst = path(m, name)
            flowdir(m, "sync", inst)
            for q in ["q1", "q2"]:
                if state(inst, q) == "awaitingUser":
                    flowdir(m, "answer", f"{inst}/{q}", "--choice", "c1")
            for node in ["w1", "w2", "w3", "w4"]:
                conflict = f"{inst}/nodes/{node}/params.conflict.yaml"
                if os.path.exists(conflict):
                    os.remove(conflict)  # a person settles it: keeps theirs, drops the other (it stays in history)
                if state(inst, node) in ("blocked", "failed", "cancelled") and "Waiting" not in open(f"{inst}/nodes/{node}/state.yaml").read() \
                        and "Upstream" not in open(f"{inst}/nodes/{node}/state.yaml").read():
                    flowdir(m, "rerun", inst, node)
            flowdir(m, "run", inst)
            flowdir(m, "sync", inst)
        if done(name):
            break
        time.sleep(a.lease + 0.2)  # whoever holds the lease may have gone: let it lapse
    for m in machines + machines[:1]:
        flowdir(m, "sync", path(m, name))


begin = time.time()
n = 0
name = new_instance(n := n + 1)
for i in range(a.steps):
    if done(name):
        name = new_instance(n := n + 1)
    step(name, i)
for name in instances:
    finish(name)

for name in instances:
    hub = f"{work}/hub-{name}.git"
    for repo in [path(m, name) for m in machines] + [hub]:
        r = subprocess.run(["git", "-C", repo, "fsck", "--strict"], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{repo}: fsck: {r.stderr.strip()[:300]}")
    heads = {m: subprocess.run(["git", "-C", path(m, name), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() for m in machines}
    if len(set(heads.values())) != 1:
        problems.append(f"{name}: clones on different commits {heads}")
    for node in ["q1", "q2", "w1", "w2", "w3", "w4"]:
        states = {m: state(path(m, name), node) for m in machines}
        if len(set(states.values())) != 1:
            problems.append(f"{name}/{node}: states differ {states}")
        if states["laptop"] != "succeeded":
            problems.append(f"{name}/{node}: not done ({states['laptop']})")
    for m in machines:
        r = subprocess.run(["grep", "-rlE", "^(<<<<<<<|>>>>>>>) ", "--exclude-dir=.git", path(m, name)], capture_output=True, text=True)
        if r.stdout.strip():
            problems.append(f"{name}: conflict markers in {r.stdout.split()}")
    history = subprocess.run(["git", "-C", hub, "log", "-p", "--all"], capture_output=True, text=True).stdout
    for (inst, node, text) in edits:
        if inst == name and text not in history:
            problems.append(f"{name}/{node}: the edit '{text}' is not in the shared history")

# Each execution marks itself: (machine, instance, node, run). One machine never runs a run
# number twice; a run one machine started and died in, before its start reached the other,
# may be run there again under the same number once the lease lapsed: then the merge keeps
# both, renumbered, so every execution has its own run record in the end.
ran = collections.Counter(tuple(line.split()) for line in open(marks).read().splitlines()) if os.path.exists(marks) else collections.Counter()
twice = [k for k, v in ran.items() if v > 1]
for k in twice[:10]:
    problems.append(f"ran twice on one machine: {' '.join(k)}")
executions = collections.Counter((k[1], k[2]) for k in ran)
for (inst, node), n in executions.items():
    records = len(glob.glob(f"{path('laptop', inst)}/nodes/{node}/runs/*/run.yaml"))
    if records < n:
        problems.append(f"{inst}/{node}: {n} executions but {records} run records")
print(f"steps={a.steps} instances={len(instances)} ops={dict(counts)} jobs-ran={sum(ran.values())} ran-twice={len(twice)} "
      f"edits={len(edits)} problems={len(problems)} seconds={time.time() - begin:.0f}")
for p in problems[:15]:
    print("  " + p)
if not a.keep:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if problems else 0)
