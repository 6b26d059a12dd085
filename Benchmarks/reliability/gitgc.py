#!/usr/bin/env python3
"""git's own maintenance beside flowdir: while `flowdir run` (or `watch`)
works on an instance, a loop runs real git commands in it at random —
`git gc`, `git repack -ad`, `git repack -adf`, and `gc --auto` triggered by
real git commands (an empty commit, with gc.auto=1). After each trial:
`git fsck --strict`, `git status` clean, a `git clone` of it, every node done.

usage: gitgc.py [--trials N] [--nodes N] [--mode run|watch] [--seed S] [--flowdir BIN]
Prints one line of figures; exits 1 if any repository broke.
"""
import os as _os, sys as _sys
_sys.path.insert(0, _os.path.dirname(_os.path.abspath(__file__)))
import argparse, os, random, shutil, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--trials", type=int, default=20)
ap.add_argument("--nodes", type=int, default=60)
ap.add_argument("--mode", choices=["run", "watch"], default="run")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../../.build/debug/flowdir"))
a = ap.parse_args()
rng = random.Random(a.seed)
fd = os.path.abspath(a.flowdir)
work = tempfile.mkdtemp(prefix="flowdir-gitgc-")
env = dict(os.environ, XDG_CONFIG_HOME=work + "/config", XDG_STATE_HOME=work + "/state", FLOWDIR_CONFIG="",
           GIT_AUTHOR_NAME="Ann", GIT_AUTHOR_EMAIL="ann@example.org", GIT_COMMITTER_NAME="Ann", GIT_COMMITTER_EMAIL="ann@example.org")
os.makedirs(work + "/wf/tools")
with open(work + "/wf/tools/Step.yaml", "w") as f:
    f.write("kind: Step\ninputs: { a: TextRef?, b: TextRef? }\noutputs: { out: TextRef }\n"
            "run:\n  command: [sh, -c, 'head -c 3000 /dev/urandom | od -An -tx1 > \"$0\"', \"{outputs.out}\"]\n")
with open(work + "/wf/dag.yaml", "w") as f:
    f.write("schema: app.workflow/v2\nname: GC\nnodes:\n")
    edges = []
    for i in range(a.nodes):
        deps = [] if i < 3 else rng.sample(range(max(0, i - 6), i), k=2)
        ports = ", ".join(f"{p}: TextRef" for p, _ in zip("ab", deps))
        f.write(f"  - {{ id: n{i}, kind: Step" + (f", inputs: {{ {ports} }}" if deps else "") + " }\n")
        edges += [f"n{d}.out -> n{i}.{p}" for p, d in zip("ab", deps)]
    f.write("edges:\n" + "".join(f"  - {e}\n" for e in edges))

GIT = [
    ["gc", "-q"],
    ["repack", "-adq"],
    ["repack", "-adfq"],
    ["-c", "gc.auto=1", "-c", "gc.autoPackLimit=2", "-c", "gc.autoDetach=false", "commit", "-q", "--allow-empty", "-m", "person"],
]

from common import state

broken, git_runs, refused = [], 0, 0
start = time.time()
for t in range(1, a.trials + 1):
    inst = f"{work}/root/t{t}"
    subprocess.run([fd, "new", "wf/dag.yaml", inst], env=env, cwd=work, check=True, capture_output=True)
    args = ["run", inst] if a.mode == "run" else ["watch", os.path.dirname(inst)]
    p = subprocess.Popen([fd, *args], env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if a.mode == "run" and p.poll() is not None:
            break
        if a.mode == "watch" and all(state(inst, f"n{i}") == "succeeded" for i in range(a.nodes)):
            break
        r = subprocess.run(["git", "-C", inst, *rng.choice(GIT)], env=env, capture_output=True, text=True)
        git_runs += 1
        refused += r.returncode != 0
        # The watcher leaves an instance alone while git is at work there (and
        # for a moment after): back to back, git would hold it for good.
        if a.mode == "watch":
            time.sleep(rng.uniform(0.1, 0.6))
    if a.mode == "watch":
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
    err = p.communicate()[1]
    problems = []
    if a.mode == "run" and p.returncode != 0:
        problems.append(f"run exited {p.returncode}: {err.strip()[:200]}")
    fsck = subprocess.run(["git", "-C", inst, "fsck", "--strict", "--no-progress"], capture_output=True, text=True)
    bad = [l for l in (fsck.stdout + fsck.stderr).splitlines() if not l.startswith("dangling")]
    if fsck.returncode != 0 or bad:
        problems.append(f"fsck: {bad[:3]}")
    status = subprocess.run(["git", "-C", inst, "status", "--porcelain"], capture_output=True, text=True).stdout
    if status:
        problems.append(f"status: {status.splitlines()[:3]}")
    clone = subprocess.run(["git", "clone", "-q", inst, f"{work}/clone{t}"], capture_output=True, text=True)
    if clone.returncode != 0:
        problems.append(f"clone: {clone.stderr.strip()[:200]}")
    stuck = [f"n{i}" for i in range(a.nodes) if state(inst, f"n{i}") != "succeeded"]
    if stuck:
        problems.append(f"not done: {stuck[:5]}")
    if problems:
        broken.append((t, problems))
print(f"mode={a.mode} trials={a.trials} nodes={a.nodes} git-commands={git_runs} (refused while flowdir held a lock: {refused}) "
      f"broken={len(broken)} seconds={time.time() - start:.0f}")
for t, problems in broken[:10]:
    print(f"  trial {t}: " + "; ".join(problems))
shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if broken else 0)
