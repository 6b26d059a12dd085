#!/usr/bin/env python3
"""kill -9 of `flowdir run` or `flowdir watch` while ssh jobs are being sent or running.

A workflow of ssh nodes (run.ssh on a loopback sshd; each job appends its
run folder's name, its job id, to a file outside the instance, then sleeps
a little) and local ones is advanced by flowdir, killed with SIGKILL at
random moments, started again, until it is done. Then every node must have
succeeded, and the host must have run exactly one job per node run: the
jobs' own marker lines are exactly the job ids the instance recorded, none
twice.

Needs sshd (scripts/sshd-local.sh starts one on a free loopback port).
usage: sshkill.py [--mode run|watch] [--kills N] [--nodes N] [--seed S] [--flowdir BIN] [--keep DIR]
"""
import argparse, atexit, collections, glob, os, random, re, shutil, signal, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import state

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["run", "watch"], default="run")
ap.add_argument("--kills", type=int, default=20)
ap.add_argument("--nodes", type=int, default=12)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../../.build/debug/flowdir"))
ap.add_argument("--keep")
a = ap.parse_args()
rng = random.Random(a.seed)
fd = os.path.abspath(a.flowdir)
work = a.keep or tempfile.mkdtemp(prefix="flowdir-sshkill-")
os.makedirs(work + "/wf/tools", exist_ok=True)
os.makedirs(work + "/root", exist_ok=True)
marks = work + "/jobs-ran"

# A host on loopback, reached only through ssh.
sshdir = work + "/ssh"
port = socket.socket()
port.bind(("127.0.0.1", 0))
port_number = port.getsockname()[1]
port.close()
sshd = subprocess.run(["bash", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts/sshd-local.sh"), "start", sshdir,
                       str(port_number)], capture_output=True, text=True)
if sshd.returncode != 0:
    sys.exit("sshd-local.sh failed: " + sshd.stderr)
sshd_pid = sshd.stdout.strip()
atexit.register(lambda: subprocess.run(["bash", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts/sshd-local.sh"),
                                        "stop", sshd_pid]))

open(work + "/wf/tools/Cluster.yaml", "w").write(
    "kind: Cluster\nresources: remote\ninputs: { a: TextRef? }\noutputs: { out: TextRef }\n"
    "params: { sleep: { type: number, default: 0.5 } }\n"
    "run:\n  ssh:\n    host: flowdir-test\n    dir: " + work + "/hostruns\n"
    "    command: [sh, -c, 'basename \"$PWD\" >> \"$1\"; sleep \"$2\"; echo done > \"$0\"', "
    f"\"{{outputs.out}}\", \"{marks}\", \"{{params.sleep}}\"]\n")
open(work + "/wf/tools/Local.yaml", "w").write(
    "kind: Local\ninputs: { a: TextRef? }\noutputs: { out: TextRef }\nrun:\n  command: [sh, -c, 'echo local > \"$0\"', \"{outputs.out}\"]\n")
with open(work + "/wf/dag.yaml", "w") as f:
    f.write("schema: app.workflow/v2\nname: SSHKill\nnodes:\n")
    edges = []
    for i in range(a.nodes):
        kind = "Cluster" if i % 3 != 2 else "Local"
        params = f", params: {{ sleep: {rng.choice([0.2, 0.5, 1.0, 2.0])} }}" if kind == "Cluster" else ""
        dep = rng.randrange(max(0, i - 4), i) if i >= 3 else None
        f.write(f"  - {{ id: n{i}, kind: {kind}{params}" + (", inputs: { a: TextRef }" if dep is not None else "") + " }\n")
        if dep is not None:
            edges.append(f"n{dep}.out -> n{i}.a")
    f.write("edges:\n" + "".join(f"  - {e}\n" for e in edges))
    f.write("options: { concurrency: { remote: 8 } }\n")
open(work + "/config.yaml", "w").write(f'ssh: {{ pollInterval: 0.3s, command: "ssh -F {sshdir}/ssh_config" }}\n')
env = dict(os.environ, XDG_CONFIG_HOME=work + "/nonexistent", XDG_STATE_HOME=work + "/state", FLOWDIR_CONFIG=work + "/config.yaml")


def flowdir(*args):
    return subprocess.run([fd, *args], env=env, cwd=work, capture_output=True, text=True)


def start(inst):
    args = ["run", inst] if a.mode == "run" else ["watch", os.path.dirname(inst)]
    out = open(f"{work}/flowdir.log", "a")
    return subprocess.Popen([fd, *args], env=env, cwd=work, stdout=out, stderr=out)


def done(inst):
    return all(state(inst, f"n{i}") == "succeeded" for i in range(a.nodes))


kills, inflight, instances, problems = 0, 0, 0, []
begin = time.time()
while kills < a.kills:
    instances += 1
    inst = f"{work}/root/i{instances}"
    if flowdir("new", "wf/dag.yaml", inst).returncode != 0:
        sys.exit("new failed")
    while kills < a.kills and not done(inst):
        p = start(inst)
        time.sleep(rng.uniform(0.1, 2.0))
        if p.poll() is None:
            busy = [i for i in range(a.nodes) if i % 3 != 2 and state(inst, f"n{i}") in ("queuedRemote", "runningRemote")]
            p.send_signal(signal.SIGKILL)
            kills += 1
            inflight += 1 if busy else 0
        p.wait()
        # Stuck (a node failed): no kill will change that; say so and go on.
        if p.returncode not in (None, -signal.SIGKILL) and not done(inst) and all(
                state(inst, f"n{i}") in ("succeeded", "failed", "cancelled", "blocked") for i in range(a.nodes)):
            break
    p = start(inst)
    deadline = time.time() + 180
    while time.time() < deadline and not done(inst) and (p.poll() is None or a.mode == "watch"):
        time.sleep(0.2)
    if a.mode == "watch":
        p.send_signal(signal.SIGTERM)
    p.wait()
    stuck = [f"n{i}" for i in range(a.nodes) if state(inst, f"n{i}") != "succeeded"]
    if stuck:
        problems.append(f"{inst}: not done: {stuck[:5]} ({state(inst, stuck[0])})")

# Each ssh job marks itself with its job id; each node run recorded with a job id must have run exactly once.
ran = collections.Counter(open(marks).read().split() if os.path.exists(marks) else [])
recorded = set()
for path in glob.glob(work + "/root/*/nodes/*/runs/*/run.yaml"):
    m = re.search(r'^job: "?([^"\n]+)"?$', open(path).read(), re.M)
    if m:
        recorded.add(m.group(1))
twice = [k for k, v in ran.items() if v > 1]
unrecorded = set(ran) - recorded
never = recorded - set(ran)
print(f"mode={a.mode} kills={kills} kills-with-ssh-jobs-in-flight={inflight} instances={instances} nodes={a.nodes} "
      f"ssh-jobs-ran={sum(ran.values())} node-runs={len(recorded)} ran-twice={len(twice)} ran-unrecorded={len(unrecorded)} "
      f"recorded-never-ran={len(never)} problems={len(problems)} seconds={time.time() - begin:.0f}")
for p in problems[:10]:
    print("  " + p)
if not a.keep:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if problems or twice or unrecorded or never else 0)
