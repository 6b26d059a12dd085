#!/usr/bin/env python3
"""flowdir serve: server time for the pages' data, and a commit's way to an open page.

- detail: GET /api/instances/<id> of a finished 1,000-node instance (the
  tool cards: states, params, last runs, outputs); target <= 100 ms.
- list: GET /api/instances over 1,000 instances; target <= 300 ms, from a cold
  disk for a server started again (the rows its last start kept).
  Both timed at the client on loopback (curl-like, one connection per
  request), first request (cold: nothing cached by flowdir, the page cache
  dropped when run as root) and then ROUNDS more (warm): median, p95, max.
- live: the delay from a commit (git commit in an instance, from its start) to
  an open page's update: the server-sent event arriving, then the page's
  GET of the detail answered. p50 and p99 over COMMITS commits.

Instances live on the disk (/tmp, ext4 here) unless TMPDIR says otherwise.
- page: the same in a real browser (headless chromium through Selenium),
  when Selenium can be imported (run this with /opt/flowdir-browser/bin/python):
  from the commit to the detail page showing it (its data-rev attribute
  moving, after the page's own 120 ms debounce of bursts, the fetch and the
  render).

usage: serve.py [--nodes 1000] [--instances 1000] [--rounds 30] [--commits 200] [--flowdir BIN]
"""
import argparse, http.client, json, os, re, shutil, statistics, subprocess, sys, tempfile, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--nodes", type=int, default=1000)
ap.add_argument("--instances", type=int, default=1000)
ap.add_argument("--rounds", type=int, default=30)
ap.add_argument("--commits", type=int, default=200)
ap.add_argument("--flowdir", default=None, help="default: a release build (scripts/release-build.sh)")
a = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
if a.flowdir:
    fd = os.path.abspath(a.flowdir)
else:
    fd = subprocess.check_output(["bash", top + "/scripts/release-build.sh", "--product", "flowdir"], text=True).strip() + "/flowdir"

work = tempfile.mkdtemp(prefix="flowdir-servebench-")
env = dict(os.environ, FLOWDIR_CONFIG="/dev/null", XDG_STATE_HOME=work + "/state", XDG_CONFIG_HOME=work + "/config")


def run(*args, cwd=work):
    return subprocess.run([fd, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def drop_caches():
    if os.geteuid() == 0:
        subprocess.run(["sync"])
        try:
            open("/proc/sys/vm/drop_caches", "w").write("3\n")
        except OSError:
            pass


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Server:
    def __init__(self, roots, watch):
        args = [fd, "serve", *roots, "--port", "0"] + ([] if watch else ["--no-watch"])
        self.p = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.PIPE, stderr=open(work + "/serve.err", "a"), text=True)
        line = self.p.stdout.readline()
        m = re.search(r"http://([^:/]+):(\d+)/\?token=(\w+)", line)
        if not m:
            sys.exit("flowdir serve did not print its URL: " + line + open(work + "/serve.err").read())
        self.host, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)

    def get(self, path):
        c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        t = time.perf_counter()
        c.request("GET", path, headers={"Authorization": "Bearer " + self.token})
        r = c.getresponse()
        body = r.read()
        took = time.perf_counter() - t
        c.close()
        if r.status != 200:
            sys.exit(f"GET {path}: {r.status} {body[:200]!r}")
        return took, body

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=60)


def timed(server, path, label, target):
    drop_caches()
    cold, body = server.get(path)
    warm = [server.get(path)[0] for _ in range(a.rounds)]
    ms = lambda s: f"{s * 1000:.1f}"
    print(f"| {label} | {len(body) / 1024:.0f} KB | {ms(cold)} | {ms(statistics.median(warm))} | {ms(pct(warm, 95))} | {ms(max(warm))} | {target} |", flush=True)


# A finished instance of N no-op steps.
subprocess.run([sys.executable, here + "/gen_dag.py", str(a.nodes), work + "/dag"], check=True)
os.makedirs(work + "/big")
run("new", work + "/dag/dag.yaml", work + "/big/dag")
subprocess.run([fd, "run", work + "/big/dag"], cwd=work, env=env, check=True, capture_output=True)
big_id = json.loads(run("show", work + "/big/dag", "--json"))["id"]

# Many small instances: a three-step workflow, each from `flowdir new`.
os.makedirs(work + "/small/tools")
open(work + "/small/tools/Touch.yaml", "w").write(open(work + "/dag/tools/Touch.yaml").read())
open(work + "/small/t.yaml", "w").write(
    "schema: app.workflow/v2\nname: Small\nnodes:\n  - { id: a, kind: Touch }\n  - { id: b, kind: Touch }\n"
    "  - { id: c, kind: Touch }\nedges: [a.out -> b.a, b.out -> c.a]\n")
os.makedirs(work + "/many")
t0 = time.time()
for i in range(a.instances):
    run("new", work + "/small/t.yaml", f"{work}/many/w{i:04d}", "--title", f"Small {i}")
print(f"made {a.instances} instances in {time.time() - t0:.0f} s; 1 instance of {a.nodes} nodes (run to the end)\n", flush=True)

print("| request | size | cold ms | warm median ms | p95 ms | max ms | target |")
print("|---|---|---|---|---|---|---|")
s = Server([work + "/big"], watch=False)
timed(s, f"/api/instances/{big_id}", f"detail, {a.nodes} nodes", "<= 100 ms")
s.stop()
s = Server([work + "/many"], watch=False)
timed(s, "/api/instances", f"list, {a.instances} instances", "<= 300 ms")
timed(s, "/api/instances?filter=active&search=Small%201", f"list, {a.instances}, filtered", "")
timed(s, "/api/inbox", f"Action Center, {a.instances} instances", "")
s.stop()
# Started again on a cold disk: the rows the last start kept (state/flowdir/serve-rows.json) are
# taken while each instance's index, inbox and instance.yaml are as they were.
s = Server([work + "/many"], watch=False)
timed(s, "/api/instances", f"list, {a.instances} instances, started again", "<= 300 ms")
s.stop()

# A commit's way to an open page: the event, then the detail fetched again.
inst = work + "/many/w0000"
inst_id = json.loads(run("show", inst, "--json"))["id"]
s = Server([work + "/many"], watch=False)
events = []
ready = threading.Event()


def listen():
    c = http.client.HTTPConnection(s.host, s.port, timeout=600)
    c.request("GET", "/api/events", headers={"Authorization": "Bearer " + s.token})
    r = c.getresponse()
    ready.set()
    while True:
        line = r.fp.readline()
        if not line:
            return
        if line.startswith(b"data: ") and inst_id.encode() in line:
            events.append(time.perf_counter())


threading.Thread(target=listen, daemon=True).start()
ready.wait(10)
time.sleep(0.3)
delays, events_only = [], []
g = ["git", "-C", inst, "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
for i in range(a.commits):
    open(inst + "/notes.txt", "w").write(f"note {i}\n")
    subprocess.run(g + ["add", "notes.txt"], check=True)
    before = len(events)
    # From the start of `git commit` (its own few ms included): the ref
    # moves, and the event goes, before git has exited.
    committed = time.perf_counter()
    subprocess.run(g + ["commit", "--quiet", "-m", f"note {i}"], check=True)
    deadline = committed + 5
    while len(events) == before and time.perf_counter() < deadline:
        time.sleep(0.0005)
    if len(events) == before:
        print(f"commit {i}: no event within 5 s")
        continue
    got = events[before]
    took, _ = s.get(f"/api/instances/{inst_id}")
    events_only.append(max(0.0, got - committed))
    delays.append(max(0.0, got - committed) + took)
    time.sleep(0.05)

# The same commits seen by a page in a browser.
page = []
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
except ImportError:
    webdriver = None
if webdriver:
    o = Options()
    o.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
        o.add_argument(arg)
    d = webdriver.Chrome(options=o, service=Service("/usr/bin/chromedriver"))
    d.get(f"http://{s.host}:{s.port}/?token={s.token}#/w/{inst_id}")
    end = time.time() + 20
    while d.execute_script("return document.body.dataset.ready") != "1" and time.time() < end:
        time.sleep(0.05)
    # Each render's wall-clock time, kept by the page itself (no polling from here).
    d.execute_script("""window.__renders = [];
        new MutationObserver(() => window.__renders.push(performance.timeOrigin + performance.now()))
          .observe(document.body, {attributes: true, attributeFilter: ['data-rev']});""")
    for i in range(min(a.commits, 100)):
        open(inst + "/notes.txt", "w").write(f"page {i}\n")
        subprocess.run(g + ["add", "notes.txt"], check=True)
        before = d.execute_script("return window.__renders.length")
        committed = time.time() * 1000
        subprocess.run(g + ["commit", "--quiet", "-m", f"page {i}"], check=True)
        deadline = time.time() + 5
        while time.time() < deadline:
            shown = d.execute_script("return window.__renders.slice(arguments[0])", before)
            if shown:
                page.append(max(0.0, shown[0] - committed) / 1000)
                break
            time.sleep(0.01)
        time.sleep(0.3)  # past the page's debounce, so each commit is its own update
    d.quit()
s.stop()
ms = lambda x: f"{x * 1000:.1f}"
print(f"\ncommit → page updated ({len(delays)} commits): p50 {ms(pct(delays, 50))} ms, p99 {ms(pct(delays, 99))} ms, "
      f"max {ms(max(delays))} ms (the event alone: p50 {ms(pct(events_only, 50))} ms, p99 {ms(pct(events_only, 99))} ms)")
if page:
    print(f"commit → a browser's page re-rendered ({len(page)} commits): p50 {ms(pct(page, 50))} ms, p99 {ms(pct(page, 99))} ms, max {ms(max(page))} ms")
else:
    print("(no browser measurement: Selenium is not importable; run with /opt/flowdir-browser/bin/python)")
shutil.rmtree(work, ignore_errors=True)
