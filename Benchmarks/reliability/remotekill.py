#!/usr/bin/env python3
"""kill -9 of `flowdir run` or `flowdir watch` while remote jobs are in flight.

A workflow of remote nodes (run.http on a `flowdir jobserver` whose model
is a tool that sleeps) and local ones is advanced by flowdir, killed with
SIGKILL at random moments and started again, until it is done. Then every
node must have succeeded, and the job server must have made exactly one
prediction per node run: the set of its predictions equals the set of job
ids the instance's run records name (none sent twice, none lost).

usage: remotekill.py [--mode run|watch] [--kills N] [--nodes N] [--seed S] [--flowdir BIN] [--keep DIR]
Prints one line of figures; exits 1 if any check failed.
"""
import argparse, glob, json, os, random, re, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import state

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["run", "watch"], default="run")
ap.add_argument("--kills", type=int, default=30)
ap.add_argument("--nodes", type=int, default=16, help="nodes of each workflow (half of them remote)")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../../.build/debug/flowdir"))
ap.add_argument("--keep", help="work here and keep it")
a = ap.parse_args()
rng = random.Random(a.seed)
fd = os.path.abspath(a.flowdir)
work = a.keep or tempfile.mkdtemp(prefix="flowdir-remotekill-")
os.makedirs(work + "/server/tools", exist_ok=True)
os.makedirs(work + "/wf/tools", exist_ok=True)
os.makedirs(work + "/root", exist_ok=True)

with open(work + "/server/tools/Work.yaml", "w") as f:
    f.write("kind: Work\noutputs: { out: TextRef }\nparams: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }\n"
            "run:\n  command: [sh, -c, 'echo \"working on $1\"; sleep \"$2\"; printf \"%s\" \"$1\" > \"$0\"', \"{outputs.out}\", \"{params.text}\", \"{params.sleep}\"]\n")
with open(work + "/wf/tools/Remote.yaml", "w") as f:
    f.write("kind: Remote\nresources: remote\ninputs: { a: TextRef? }\noutputs: { out: TextRef }\n"
            "params: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }\n"
            "run:\n  http:\n    endpoint: gpu\n    model: tools/Work\n    input: { text: \"{params.text}\", sleep: \"{params.sleep}\" }\n"
            "    outputs: { out: output }\n")
with open(work + "/wf/tools/Local.yaml", "w") as f:
    f.write("kind: Local\ninputs: { a: TextRef? }\noutputs: { out: TextRef }\nparams: { text: { type: string, default: x } }\n"
            "run:\n  command: [sh, -c, 'printf \"%s\" \"$1\" > \"$0\"', \"{outputs.out}\", \"{params.text}\"]\n")
with open(work + "/wf/dag.yaml", "w") as f:
    f.write("schema: app.workflow/v2\nname: RemoteKill\nnodes:\n")
    edges = []
    for i in range(a.nodes):
        kind = "Remote" if i % 2 == 0 else "Local"
        params = f"text: n{i}" + (f", sleep: {rng.choice([0.2, 0.5, 1.0, 1.5])}" if kind == "Remote" else "")
        dep = rng.randrange(max(0, i - 4), i) if i >= 3 else None
        f.write(f"  - {{ id: n{i}, kind: {kind}, params: {{ {params} }}" + (", inputs: { a: TextRef }" if dep is not None else "") + " }\n")
        if dep is not None:
            edges.append(f"n{dep}.out -> n{i}.a")
    f.write("edges:\n" + "".join(f"  - {e}\n" for e in edges))
    f.write("options: { concurrency: { remote: 8, local: 2 } }\n")

# A token file others can read is refused: made mode 0600 from its first byte.
token = "kill-test-token-" + os.urandom(8).hex()
with os.fdopen(os.open(work + "/token", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
    f.write(token + "\n")
log = open(work + "/jobserver.out", "w")
server = subprocess.Popen([fd, "jobserver", "--port", "0", "--dir", work + "/jobserver", "--tools", work + "/server/tools",
                           "--token-file", work + "/token"], stdout=log, stderr=log, start_new_session=True)
port = None
for _ in range(300):
    m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", open(work + "/jobserver.out").read())
    if m:
        port = int(m.group(1))
        break
    time.sleep(0.05)
if port is None:
    sys.exit("the job server did not start: " + open(work + "/jobserver.out").read())
with open(work + "/config.yaml", "w") as f:
    f.write(f"endpoints:\n  gpu: {{ url: http://127.0.0.1:{port}/v1, pollInterval: 0.3s, firstBackoff: 0.2s, maxBackoff: 2s }}\n")
env = dict(os.environ, XDG_CONFIG_HOME=work + "/nonexistent", XDG_STATE_HOME=work + "/state", FLOWDIR_CONFIG=work + "/config.yaml",
           FLOWDIR_TOKEN_GPU=token)


def flowdir(*args):
    return subprocess.run([fd, *args], env=env, cwd=work, capture_output=True, text=True)


def start(inst):
    args = ["run", inst] if a.mode == "run" else ["watch", os.path.dirname(inst)]
    out = open(f"{work}/flowdir.log", "a")
    return subprocess.Popen([fd, *args], env=env, cwd=work, stdout=out, stderr=out)


def done(inst):
    return all(state(inst, f"n{i}") == "succeeded" for i in range(a.nodes))


kills, instances, problems, inflight = 0, 0, [], 0
begin = time.time()
try:
    while kills < a.kills:
        instances += 1
        inst = f"{work}/root/i{instances}"
        r = flowdir("new", "wf/dag.yaml", inst)
        if r.returncode != 0:
            sys.exit("new failed: " + r.stderr)
        while kills < a.kills and not done(inst):
            p = start(inst)
            time.sleep(rng.uniform(0.05, 1.5))
            if p.poll() is None:
                busy = [i for i in range(0, a.nodes, 2) if state(inst, f"n{i}") in ("queuedRemote", "runningRemote", "downloading")]
                p.send_signal(signal.SIGKILL)
                kills += 1
                inflight += 1 if busy else 0
            p.wait()
        p = start(inst)
        deadline = time.time() + 120
        while time.time() < deadline and not done(inst) and (p.poll() is None or a.mode == "watch"):
            time.sleep(0.1)
        if a.mode == "watch":
            p.send_signal(signal.SIGTERM)
        p.wait()
        if a.mode == "run" and not done(inst):
            # run ends when nothing more can happen; once more, as a person would
            flowdir("run", inst)
        stuck = [f"n{i}" for i in range(a.nodes) if state(inst, f"n{i}") != "succeeded"]
        if stuck:
            problems.append(f"{inst}: not done: {stuck[:5]} ({state(inst, stuck[0])})")
finally:
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()

# One prediction per remote node run: the job server's predictions are exactly the job ids the run records name.
made = set()
for path in glob.glob(work + "/jobserver/predictions/*.json"):
    made.add(json.load(open(path))["prediction"]["id"])
recorded, runs = set(), 0
for path in glob.glob(work + "/root/*/nodes/*/runs/*/run.yaml"):
    text = open(path).read()
    m = re.search(r"^job: (\S+)", text, re.M)
    if m:
        runs += 1
        recorded.add(m.group(1))
unrecorded = made - recorded
missing = recorded - made
print(f"mode={a.mode} kills={kills} kills-with-remote-jobs-in-flight={inflight} instances={instances} nodes={a.nodes} predictions={len(made)} remote-runs={runs} "
      f"sent-but-unrecorded={len(unrecorded)} recorded-but-never-made={len(missing)} problems={len(problems)} seconds={time.time() - begin:.0f}")
for p in problems[:10]:
    print("  " + p)
if unrecorded:
    print("  predictions no run records: " + ", ".join(sorted(unrecorded)[:10]))
if not a.keep:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if problems or unrecorded or missing or runs != len(made) else 0)
