#!/usr/bin/env python3
"""Hostile inputs against everything flowdir serves and reads (docs/security.md).

Starts, in a temporary HOME whose ~/.config/flowdir/secrets.yaml holds
canary secrets: a `flowdir jobserver` (its token in <dir>/token), a
`flowdir watch` with a webhook receiver (a remote job of its instance
running on that job server), and a `flowdir serve` of a root of instances.
Then sends each category of hostile input (hostile_cases.py):

  jobserver  requests without the token, with a wrong one, from a page (Origin,
             Sec-Fetch-Site), in the wrong content type, malformed HTTP,
             oversized heads and bodies, traversal, hostile JSON and multipart
  serve      every state-changing route with each way a page or a stranger
             could send it, reads without the token, Host rebinding, traversal
             and links out of an instance, hostile JSON with the token
  webhook    forged, stale, malformed and oversized deliveries to the receiver
  files      hostile instance files a collaborator could commit: symlinks to
             the secrets, FIFOs, devices, absurd numbers and durations, control
             characters, deep nesting, YAML bombs, bogus LFS pointers and
             .gitattributes lines, request files; each then run, shown, checked
             and served
  cli        hostile argv, durations, names, paths, options and environment

Each input's oracle: nothing crashes (no signal, no trap, no hang; each
server still answers afterwards); no secret is read (the canaries, the
webhook secret and both servers' tokens appear in no answer, header, log,
output, commit or error, and nothing is answered without the token); nothing
changes without the token and the right origin (the instances' files, refs
and pending requests and the job server's predictions and files are compared
before and after each such request, and nothing is written outside them).

usage: hostile.py [--quick] [--flowdir BIN] [--keep DIR] [--verbose]
Prints a line per category and `tried N, crashes 0, secrets read 0,
unauthorised changes 0`; exits 1 on any failure.
"""
import argparse, base64, hashlib, json, os, re, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_cases
from hostile_net import Http, b64, wait_for

ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true", help="a subset (under a minute), for the test command")
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.build/debug/flowdir"))
ap.add_argument("--keep", help="work here and keep it")
ap.add_argument("--verbose", action="store_true", help="print each request's answer")
a = ap.parse_args()


class Tally:
    """Per category: tried, crashes, secrets read, unauthorised changes; and what went wrong."""

    def __init__(self):
        self.cats, self.problems = {}, []

    def add(self, cat, name, crash=None, secret=None, change=None):
        c = self.cats.setdefault(cat, [0, 0, 0, 0])
        c[0] += 1
        for i, why in ((1, crash), (2, secret), (3, change)):
            if why:
                c[i] += 1
                self.problems.append(f"{cat}: {name}: {why}")


class Rig:
    """The temporary HOME, its secrets, the three servers, and the oracles."""

    def __init__(self, fd, work):
        self.fd, self.work, self.procs = fd, work, []
        self.home = work + "/home"
        self.cfg = self.home + "/.config/flowdir"
        os.makedirs(self.cfg + "/tools", exist_ok=True)
        for d in ("root", "hookroot", "wf/tools", "jstools", "state", "outside"):
            os.makedirs(f"{work}/{d}", exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWDIR_", "XDG_"))}
        self.env.update(HOME=self.home, XDG_STATE_HOME=work + "/state", GIT_CONFIG_NOSYSTEM="1")
        self.canary = "canary-" + os.urandom(12).hex()
        self.whsec = "whsec_" + base64.b64encode(os.urandom(24)).decode()
        self.secrets = {"canary endpoint token": self.canary, "webhook secret": self.whsec}

    def write(self, rel, text, mode=None):
        path = rel if rel.startswith("/") else self.work + "/" + rel
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(path, mode)
        return path

    def flowdir(self, *args, cwd=None, env=None, timeout=60, stdin=None):
        """(exit status, output) of a flowdir command; status None on a hang (killed after `timeout`)."""
        p = subprocess.Popen([self.fd, *args], cwd=cwd or self.work, env=dict(self.env, **(env or {})), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = p.communicate(stdin, timeout=timeout)
            return p.returncode, out
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            return None, p.communicate()[0]

    def start(self, name, args, ready, cwd=None):
        log = open(f"{self.work}/{name}.log", "w")
        p = subprocess.Popen([self.fd, *args], cwd=cwd or self.work, env=self.env, stdout=log, stderr=log, start_new_session=True)
        self.procs.append(p)
        m = wait_for(lambda: re.search(ready, self.log(name)), 120)
        if not m:
            sys.exit(f"{name} did not start: {self.log(name)[-3000:]}")
        return p, m

    def log(self, name):
        return open(f"{self.work}/{name}.log", errors="replace").read()

    def setup(self):
        w = self.work
        self.write("jstools/Work.yaml", "kind: Work\noutputs: { out: TextRef }\n"
                   "params: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }\n"
                   "run:\n  command: [sh, -c, 'echo \"working on $1\"; sleep \"$2\"; printf \"%s\" \"$1\" > \"$0\"', \"{outputs.out}\", \"{params.text}\", \"{params.sleep}\"]\n")
        self.js, m = self.start("jobserver", ["jobserver", "--port", "0", "--dir", w + "/js", "--tools", w + "/jstools"],
                                r"http://127\.0\.0\.1:(\d+)/v1")
        self.jsport = int(m.group(1))
        self.jstoken = open(w + "/js/token").read().strip()
        self.secrets["job server token"] = self.jstoken
        self.hookport = hostile_cases.free_port()
        self.write(self.cfg + "/config.yaml",
                   f"endpoints:\n  gpu: {{ url: http://127.0.0.1:{self.jsport}/v1, pollInterval: 10m, firstBackoff: 0.2s, maxBackoff: 1s, "
                   f"webhook: http://127.0.0.1:{self.hookport}/hooks }}\n  canary: {{ url: http://127.0.0.1:9/v1 }}\n")
        self.write(self.cfg + "/secrets.yaml", f"endpoints:\n  gpu: {{ token: {self.jstoken}, webhookSecret: {self.whsec} }}\n"
                   f"  canary: {{ token: {self.canary} }}\n", mode=0o600)
        # The secrets file as a tool would get it whole: base64 or hex of its bytes.
        raw = open(self.cfg + "/secrets.yaml", "rb").read()
        self.secrets["secrets.yaml in base64"] = base64.b64encode(raw).decode()[:40]
        self.secrets["secrets.yaml in hex"] = raw.hex()[:40]
        tools = {"Note": "kind: Note\noutputs: { out: TextRef }\nparams: { text: { type: string, default: noted }, width: { type: number, default: 1 } }\n"
                         "run:\n  command: [sh, -c, 'printf \"%s\" \"$1\" > \"$0\"', \"{outputs.out}\", \"{params.text}\"]\n",
                 "Cat": "kind: Cat\ninputs: { a: TextRef }\noutputs: { out: TextRef }\n"
                        "run:\n  command: [sh, -c, 'cat \"$1\" > \"$0\"', \"{outputs.out}\", \"{inputs.a}\"]\n",
                 "Remote": "kind: Remote\nresources: remote\noutputs: { out: TextRef }\nparams: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }\n"
                           "run:\n  http:\n    endpoint: gpu\n    model: tools/Work\n    input: { text: \"{params.text}\", sleep: \"{params.sleep}\" }\n    outputs: { out: output }\n"}
        for k, v in tools.items():
            self.write(f"wf/tools/{k}.yaml", v)
        for k in ("Note", "Cat"):
            self.write(f"{self.cfg}/tools/{k}.yaml", tools[k])
        self.write("wf/pair.yaml", "schema: app.workflow/v2\nname: Pair\nnodes:\n  - { id: a, kind: Note }\n  - { id: b, kind: Cat, inputs: { a: TextRef } }\n"
                   "  - id: look\n    kind: Choice\n    outputs: { choice: JSONRef }\n    await: { type: choice, choices: [warm, cool], expiresIn: 1h }\n"
                   "edges: [a.out -> b.a]\n")
        self.write("wf/remote.yaml", "schema: app.workflow/v2\nname: Hooked\nnodes:\n  - { id: r, kind: Remote, params: { text: hooked, sleep: 3600 } }\n")
        shutil.copy(os.path.dirname(os.path.abspath(__file__)) + "/../../workflows/review-and-render.yaml", w + "/wf/rr.yaml")
        shutil.copytree(os.path.dirname(os.path.abspath(__file__)) + "/../../workflows/tools", w + "/wf/tools", dirs_exist_ok=True)
        for name, tpl in (("rr", "rr.yaml"), ("done", "pair.yaml"), ("links", "pair.yaml")):
            self.must("new", "wf/" + tpl, "root/" + name)
            self.flowdir("run", "root/" + name)
        # A link an instance's own file leads out of it by (committed), and one into its .git/.
        os.symlink(self.cfg + "/secrets.yaml", w + "/root/links/nodes/a/out/leak.txt")
        os.symlink("../../../.git/config", w + "/root/links/nodes/a/out/gitconfig.txt")
        self.git(w + "/root/links", "add", "-A")
        self.git(w + "/root/links", "commit", "-qm", "links")
        self.must("new", "wf/remote.yaml", "hookroot/hooked")
        self.watch, _ = self.start("watch", ["watch", w + "/hookroot"], r"receiving webhooks")
        # The remote job runs (an hour's sleep): its webhook is what a forger would fake.
        if not wait_for(lambda: self.state(w + "/hookroot/hooked", "r") in ("queuedRemote", "runningRemote"), 60):
            sys.exit("the remote job did not start: " + self.log("watch")[-3000:])
        self.job = wait_for(lambda: self.job_of(w + "/hookroot/hooked", "r"), 30)
        time.sleep(1)
        self.serve, m = self.start("serve", ["serve", w + "/root", "--port", "0", "--no-watch"],
                                   r"http://127\.0\.0\.1:(\d+)/\?token=(\w+)")
        self.sport, self.stoken = int(m.group(1)), m.group(2)
        self.secrets["serve token"] = self.stoken
        self.ids = {n: self.instance_id(w + "/root/" + n) for n in ("rr", "done", "links")}
        self.jsh = Http(self.jsport)
        self.sh = Http(self.sport)
        self.hh = Http(self.hookport)

    def must(self, *args):
        rc, out = self.flowdir(*args)
        if rc != 0:
            sys.exit(f"flowdir {' '.join(args)}: {rc}: {out.decode(errors='replace')}")

    def git(self, folder, *args):
        return subprocess.run(["git", "-C", folder, "-c", "user.name=Mallory", "-c", "user.email=mallory@example.com", *args],
                              capture_output=True, env=self.env)

    @staticmethod
    def state(inst, node):
        try:
            m = re.search(r"^state: (\S+)", open(f"{inst}/nodes/{node}/state.yaml").read(), re.M)
            return m and m.group(1)
        except OSError:
            return None

    @staticmethod
    def job_of(inst, node):
        try:
            m = re.search(r"^job: (\S+)", open(f"{inst}/nodes/{node}/state.yaml").read(), re.M)
            return m and m.group(1)
        except OSError:
            return None

    @staticmethod
    def instance_id(inst):
        try:
            m = re.search(r"^id: (\S+)", open(inst + "/instance.yaml").read(), re.M)
            return m.group(1) if m else "none"
        except OSError:
            return "none"

    # The oracles.

    def leaks(self, blob, allow=()):
        """The names of the secrets found in `blob` (bytes or str)."""
        text = blob if isinstance(blob, str) else bytes(blob).decode("latin-1")
        return [name for name, s in self.secrets.items() if name not in allow and s in text]

    def snapshot(self, folders):
        """Each instance's files (not symlinks' targets), refs and pending requests, as hashes."""
        out = {}
        for folder in folders:
            files = {}
            for base, dirs, names in os.walk(folder):
                rel = os.path.relpath(base, folder)
                top = rel.split(os.sep)[0]
                if top == ".git" and not rel.startswith((".git/refs",)) and rel != ".git":
                    continue
                if top == ".flowdir" and not rel.startswith(".flowdir/requests") and rel != ".flowdir":
                    continue
                for n in names:
                    p = os.path.join(base, n)
                    if rel == ".git" and n not in ("HEAD", "packed-refs"):
                        continue
                    if rel == ".flowdir":
                        continue
                    try:
                        files[os.path.relpath(p, folder)] = os.readlink(p) if os.path.islink(p) else hashlib.sha1(open(p, "rb").read()).hexdigest()
                    except OSError as e:
                        files[os.path.relpath(p, folder)] = str(e)
            out[folder] = files
        out["outside"] = sorted(os.listdir(self.work + "/outside")) + sorted(os.listdir(self.work + "/root"))
        return out

    def jobserver_state(self):
        """The job server's predictions (id, status) and files, as it answers them with its token."""
        auth = {"Authorization": "Bearer " + self.jstoken}
        preds, url = [], "/v1/predictions"
        while url:
            s, _, body = self.jsh.request("GET", url, auth)
            if s != 200:
                return f"GET {url}: {s}"
            j = json.loads(body)
            preds += [(p["id"], p["status"]) for p in j["results"]]
            url = j.get("next") and re.sub(r"^https?://[^/]+", "", j["next"])
        s, _, body = self.jsh.request("GET", "/v1/files", auth)
        return sorted(preds), body if s == 200 else s

    def alive(self, which):
        """Why `which` (jobserver, serve, watch) is not up and answering, or None."""
        p = {"jobserver": self.js, "serve": self.serve, "watch": self.watch}[which]
        if p.poll() is not None:
            return f"{which} exited with {p.returncode}"
        if which == "jobserver":
            s = self.jsh.request("GET", "/health-check")[0]
        elif which == "serve":
            s = self.sh.request("GET", "/", {"Authorization": "Bearer " + self.stoken})[0]
        else:
            s = self.hh.request("POST", "/not-a-hook", {"Content-Type": "application/json"}, b"{}")[0]
            s = 200 if s == 404 else s
        return None if s == 200 else f"{which} no longer answers ({s})"

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def final_scan(rig, t):
    """Logs, commits and files: no secret anywhere but where it is kept."""
    w = rig.work
    for name in ("jobserver", "serve", "watch"):
        text = rig.log(name)
        if name == "serve":
            text = text.replace(f"/?token={rig.stoken}", "/?token=(printed)")
        t.add("logs", f"{name}'s output", secret=", ".join(rig.leaks(text)) or None)
    for base, _, names in os.walk(w + "/js"):
        for n in names:
            p = os.path.join(base, n)
            if n != "token" and os.path.isfile(p) and not os.path.islink(p):
                leaked = rig.leaks(open(p, "rb").read())
                if leaked:
                    t.add("logs", os.path.relpath(p, w), secret=", ".join(leaked))
    hooklogs = w + "/state/flowdir"
    for base, _, names in os.walk(hooklogs):
        for n in names:
            p = os.path.join(base, n)
            if os.path.isfile(p) and "serve" not in n:
                leaked = rig.leaks(open(p, "rb").read(), allow=("serve token",))
                if leaked:
                    t.add("logs", os.path.relpath(p, w), secret=", ".join(leaked))
    for root in ("root", "hookroot"):
        for inst in sorted(os.listdir(f"{w}/{root}")):
            folder = f"{w}/{root}/{inst}"
            if not os.path.isdir(folder + "/.git"):
                continue
            objs = subprocess.run(["git", "-C", folder, "cat-file", "--batch-all-objects", "--batch"], capture_output=True).stdout
            t.add("commits", f"{root}/{inst}'s git objects", secret=", ".join(rig.leaks(objs)) or None)


def main():
    fd = os.path.abspath(a.flowdir)
    work = a.keep or tempfile.mkdtemp(prefix="flowdir-hostile-")
    os.makedirs(work, exist_ok=True)
    rig, t = Rig(fd, work), Tally()
    hostile_cases.VERBOSE = a.verbose
    begin = time.time()
    try:
        rig.setup()
        for cat, run in hostile_cases.CATEGORIES:
            start, n = time.time(), sum(c[0] for c in t.cats.values())
            run(rig, t, a.quick)
            c = t.cats.get(cat, [0, 0, 0, 0])
            print(f"{cat:10} tried {c[0]:4}, crashes {c[1]}, secrets read {c[2]}, unauthorised changes {c[3]}  ({time.time() - start:.0f} s)", flush=True)
        for which in ("jobserver", "serve", "watch"):
            t.add("servers", f"{which} at the end", crash=rig.alive(which))
    finally:
        rig.stop()
    final_scan(rig, t)
    for cat in ("servers", "logs", "commits"):
        c = t.cats[cat]
        print(f"{cat:10} checked {c[0]:2}, crashes {c[1]}, secrets read {c[2]}")
    inputs = [c for k, c in t.cats.items() if k not in ("servers", "logs", "commits")]
    tot = [sum(c[i] for c in t.cats.values()) for i in range(1, 4)]
    print(f"tried {sum(c[0] for c in inputs)}, crashes {tot[0]}, secrets read {tot[1]}, unauthorised changes {tot[2]} "
          f"({time.time() - begin:.0f} s{', quick' if a.quick else ''})")
    for p in t.problems[:60]:
        print("  " + p)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("kept: " + work)
    sys.exit(1 if t.problems else 0)


main()
