#!/usr/bin/env python3
"""A short remote job: what `flowdir run` adds to a direct call.

One instance with one `run.http` node whose job sleeps SECONDS (0.3) on a
`flowdir jobserver` (its model a tool, or with --cog a real cog server the
job server starts), the endpoint at the default 10 s poll interval. Each
figure is the median of RUNS:

  direct      POST the prediction to the job server with `Prefer: wait`,
              then GET its output file (what a script calling it would do)
  direct cog  (--cog) POST to the cog server itself (cog's own sync API)
  flowdir     `flowdir run` of a new instance, from exec to exit (process
              start, the node's commits, the job, its download)
  local       `flowdir run` of a node that sleeps as long on this machine:
              flowdir's own costs for a step, with no job API
and the job server's `GET /v1/predictions/...` during the flowdir runs
(0: no poll was needed). --old adds one run sent without the wait
(`syncWait: 0s`), as flowdir did before: the first poll, 10 s later.

usage: short-job.py [--runs 5] [--seconds 0.3] [--cog] [--old] [--flowdir BIN]
  (default BIN: a release build, `scripts/release-build.sh`)
"""
import argparse, json, os, re, signal, statistics, subprocess, tempfile, time, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--seconds", type=float, default=0.3)
ap.add_argument("--cog", action="store_true", help="the model is a cog server (venv: --cog-python)")
ap.add_argument("--cog-python", default=os.environ.get("FLOWDIR_COG_VENV", "/opt/flowdir-cog"))
ap.add_argument("--old", action="store_true", help="also one run without the wait (10 s poll)")
ap.add_argument("--flowdir")
ap.add_argument("--keep")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fd = a.flowdir or subprocess.run(["bash", root + "/scripts/release-build.sh", "--product", "flowdir"], check=True,
                                 capture_output=True, text=True).stdout.strip() + "/flowdir"
work = a.keep or tempfile.mkdtemp(prefix="flowdir-short-job-")
for d in ("server/tools", "wf/tools", "root", "cog"):
    os.makedirs(f"{work}/{d}", exist_ok=True)

open(f"{work}/server/tools/Sleep.yaml", "w").write(
    "kind: Sleep\noutputs: { out: TextRef }\nparams: { seconds: { type: number, default: 0.3 } }\n"
    "run:\n  command: [sh, -c, 'sleep \"$1\"; echo done > \"$0\"', \"{outputs.out}\", \"{params.seconds}\"]\n")
open(f"{work}/cog/predict.py", "w").write(
    "import time\nfrom cog import BasePredictor, Input, Path\n\n"
    "class Predictor(BasePredictor):\n"
    "    def predict(self, seconds: float = Input(default=0.3)) -> Path:\n"
    "        time.sleep(seconds)\n        out = Path('/tmp/short-job-out.txt')\n        out.write_text('done\\n')\n        return out\n")
model = "bench/sleep" if a.cog else "tools/Sleep"
open(f"{work}/wf/tools/Gpu.yaml", "w").write(
    "kind: Gpu\nresources: remote\noutputs: { out: TextRef }\nparams: { seconds: { type: number, default: 0.3 } }\n"
    f"run:\n  http:\n    endpoint: gpu\n    model: {model}\n    input: {{ seconds: \"{{params.seconds}}\" }}\n    outputs: {{ out: output }}\n")
open(f"{work}/wf/tools/Here.yaml", "w").write(
    "kind: Here\noutputs: { out: TextRef }\nparams: { seconds: { type: number, default: 0.3 } }\n"
    "run:\n  command: [sh, -c, 'sleep \"$1\"; echo done > \"$0\"', \"{outputs.out}\", \"{params.seconds}\"]\n")
for kind in ("Gpu", "Here"):
    open(f"{work}/wf/{kind}.yaml", "w").write(
        f"schema: app.workflow/v2\nname: Short {kind}\nnodes:\n  - {{ id: r, kind: {kind}, params: {{ seconds: {a.seconds} }} }}\n")

args = [fd, "jobserver", "--port", "0", "--dir", f"{work}/jobserver", "--tools", f"{work}/server/tools"]
if a.cog:
    args += ["--model", f"{model}=cog:{work}/cog", "--cog-python", a.cog_python]
out = open(f"{work}/jobserver.out", "w")
server = subprocess.Popen(args, stdout=out, stderr=out, start_new_session=True)
try:
    port = None
    for _ in range(600):
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", open(f"{work}/jobserver.out").read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}/v1"
    token = open(f"{work}/jobserver/token").read().strip()

    def call(method, url, body=None, headers=None):
        h = {"Authorization": f"Bearer {token}", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=h, method=method), timeout=120) as r:
            return r.read()

    def direct():
        t = time.perf_counter()
        p = json.loads(call("POST", f"{base}/models/{model}/predictions", {"input": {"seconds": a.seconds}}, {"Prefer": "wait"}))
        assert p["status"] == "succeeded", p
        call("GET", p["output"])
        return time.perf_counter() - t

    direct()  # a cog server says READY first; the first call waits for it
    cog_url = json.loads(call("GET", f"{base}/_stats")).get("models", {}).get(model, {}).get("url") if a.cog else None

    def direct_cog():
        # cog takes one prediction at a time (409 while busy): untimed, until it is idle.
        while json.loads(urllib.request.urlopen(f"{cog_url}/health-check", timeout=10).read()).get("status") != "READY":
            time.sleep(0.01)
        t = time.perf_counter()
        req = urllib.request.Request(f"{cog_url}/predictions", data=json.dumps({"input": {"seconds": a.seconds}}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=120) as r:
            assert json.loads(r.read())["status"] == "succeeded"
        return time.perf_counter() - t

    def config(extra=""):
        open(f"{work}/config.yaml", "w").write(f"endpoints:\n  gpu: {{ url: {base}{extra} }}\n")

    env = dict(os.environ, XDG_CONFIG_HOME=f"{work}/nonexistent", XDG_STATE_HOME=f"{work}/state",
               FLOWDIR_CONFIG=f"{work}/config.yaml", FLOWDIR_TOKEN_GPU=token)
    count = 0

    def run(kind):
        global count
        count += 1
        inst = f"root/{kind.lower()}{count}"
        subprocess.run([fd, "new", f"wf/{kind}.yaml", inst], cwd=work, env=env, check=True, capture_output=True)
        t = time.perf_counter()
        r = subprocess.run([fd, "run", inst], cwd=work, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - t
        assert r.returncode == 0, r.stdout + r.stderr
        return elapsed

    def polls():
        return sum(1 for l in open(f"{work}/jobserver/access.log") if re.search(r" GET /v1/predictions/\w+ ", l))

    config()
    figures = {"direct": [direct() for _ in range(a.runs)]}
    if a.cog:
        figures["direct cog"] = [direct_cog() for _ in range(a.runs)]
    before = polls()
    figures["flowdir"] = [run("Gpu") for _ in range(a.runs)]
    flowdir_polls = polls() - before
    figures["local"] = [run("Here") for _ in range(a.runs)]
    if a.old:
        config(", syncWait: 0s")
        figures["flowdir, no wait (before)"] = [run("Gpu")]

    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"{a.seconds} s job on {'cog via ' if a.cog else ''}flowdir jobserver, poll interval 10 s, median of {a.runs}:")
    for k, v in figures.items():
        print(f"  {k:28s} {med[k] * 1000:8.0f} ms   (min {min(v) * 1000:.0f}, max {max(v) * 1000:.0f})")
    print(f"  flowdir over direct          {(med['flowdir'] - med['direct']) * 1000:8.0f} ms")
    if a.cog:
        print(f"  flowdir over direct cog      {(med['flowdir'] - med['direct cog']) * 1000:8.0f} ms")
    print(f"  flowdir over local           {(med['flowdir'] - med['local']) * 1000:8.0f} ms   (the job API's share)")
    print(f"  polls of a prediction during the flowdir runs: {flowdir_polls}")
finally:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait()
