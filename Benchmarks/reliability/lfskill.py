#!/usr/bin/env python3
"""Large files beside git (docs/storage.md) under kill -9: two machines, a
hub, and SIGKILL at random moments of what moves or drops content.

Machine "A" and machine "B" are two clones of one instance (FLOWDIR_HOST
tells them apart) with a bare hub between them, over a file URL and over
ssh (the loopback sshd of scripts/sshd-local.sh). The workflow's step
writes a multi-MB output (a new random file each run), so each run is an
ingest into the store. At each step one machine does one thing, killed with
SIGKILL at a random moment of it most of the time: a rerun (ingest), `sync`
(upload, and the fetch and merge of what the other sent), `storage get
--all` (download), `storage free`, or a free on A and on B started at the
same moment (each killed or not).

After every step: 0 pointers whose content is neither in that repository's
store nor on the hub — every pointer of the hub's history in the hub's
store, every pointer of each clone's history (its own and what it fetched)
in its store or the hub's; every object in a store at its pointer's size
(its bytes are re-hashed by `git lfs fsck` at the end); `git fsck --strict`
of all three. After a step nobody killed: `git status` clean in both
clones. At the end, after a final sync, get and sync of both: `git lfs
fsck` in all three, both clones on one commit, every current output the
bytes its pointer names.

Then the things a machine's surroundings do (`--no-extras` skips them):
a full disk (a small tmpfs) during an ingest and during a download — a
clear error, nothing lost, and it works once space returns; a remote that
vanishes mid-transfer (sshd killed during an upload and during a download;
the hub's folder removed during an upload) — a clear error, nothing
half-written in any store, and the next sync once it is back sends it.

usage: lfskill.py [--kills N] [--transport file|ssh|both] [--mb M] [--seed S] [--flowdir BIN] [--keep DIR] [--no-extras]
"""
import argparse, collections, os, random, shutil, signal, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--kills", type=int, default=300, help="kills in all (shared by the transports)")
ap.add_argument("--transport", choices=["file", "ssh", "both"], default="both")
ap.add_argument("--mb", type=float, default=4, help="MB the step writes")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--flowdir", default=os.path.join(os.path.dirname(__file__), "../../.build/debug/flowdir"))
ap.add_argument("--keep")
ap.add_argument("--no-extras", action="store_true", help="skip the full disk and vanishing remote checks")
a = ap.parse_args()
rng = random.Random(a.seed)
fd = os.path.abspath(a.flowdir)
repo_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
work = a.keep or tempfile.mkdtemp(prefix="flowdir-lfskill-", dir="/var/tmp")
os.makedirs(work + "/wf/tools", exist_ok=True)
size = int(a.mb * 1024 * 1024)
open(work + "/wf/tools/Big.yaml", "w").write(
    "kind: Big\noutputs: { out: FileRef }\nparams: { bytes: { type: integer, default: %d } }\n"
    "run:\n  command: [sh, -c, 'head -c \"$1\" /dev/urandom > \"$0\"', \"{outputs.out}\", \"{params.bytes}\"]\n" % size)
open(work + "/wf/tools/Use.yaml", "w").write(
    "kind: Use\ninputs: { in: FileRef }\noutputs: { out: TextRef }\n"
    "run:\n  command: [sh, -c, 'sha256sum < \"$1\" | cut -c1-64 > \"$0\"', \"{outputs.out}\", \"{inputs.in}\"]\n")
open(work + "/wf/t.yaml", "w").write("""schema: app.workflow/v2
name: Large
nodes:
  - { id: big, kind: Big }
  - { id: big2, kind: Big, params: { bytes: %d } }
  - { id: use, kind: Use }
edges: [big.out -> use.in]
""" % (size // 2 + 12345))
os.makedirs(work + "/config/flowdir", exist_ok=True)
open(work + "/config/flowdir/config.yaml", "w").write("sync: { lease: 3s }\n")
base_env = dict(os.environ, XDG_CONFIG_HOME=work + "/config", XDG_STATE_HOME=work + "/state", FLOWDIR_CONFIG="")
base_env.pop("GIT_SSH_COMMAND", None)

problems, counts = [], collections.Counter()
# A machine whose last flowdir was killed may show its last output moved in but not
# committed (git status not clean) until its next `run` recovers it: not checked till then.
killed_last = {"A": False, "B": False}
durations = collections.defaultdict(list)  # op → seconds of the runs nobody killed
ssh = {}  # the loopback sshd: dir, port, pid


def problem(text):
    problems.append(text)
    print("  PROBLEM " + text, flush=True)


def git(repo, *args, env=None):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, env=env)


def start_sshd():
    r = subprocess.run(["bash", repo_root + "/scripts/sshd-local.sh", "start", ssh["dir"], str(ssh["port"])], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("sshd-local.sh: " + r.stderr)
    ssh["pid"] = r.stdout.strip()


def stop_sshd():
    if ssh.get("pid"):
        subprocess.run(["bash", repo_root + "/scripts/sshd-local.sh", "stop", ssh["pid"]])
        ssh["pid"] = None


class Setup:
    """A, B and the hub of one transport."""

    def __init__(self, name, transport):
        self.dir = f"{work}/{name}"
        os.makedirs(self.dir, exist_ok=True)
        self.hub = self.dir + "/hub.git"
        self.transport = transport
        self.env = dict(base_env)
        if transport == "ssh":
            self.env["GIT_SSH_COMMAND"] = f"ssh -F {ssh['dir']}/ssh_config"
            self.url = "flowdir-test:" + self.hub
        else:
            self.url = "file://" + self.hub
        self.paths = {"A": self.dir + "/A", "B": self.dir + "/B"}
        self.pointer_cache = {}
        subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", self.hub], check=True)
        self.must("A", "new", work + "/wf/t.yaml", self.paths["A"])
        git(self.paths["A"], "remote", "add", "origin", self.url)
        self.must("A", "run", self.paths["A"])
        self.must("A", "sync", self.paths["A"])
        self.must("B", "clone", self.url, self.paths["B"])

    def envof(self, m):
        return dict(self.env, FLOWDIR_HOST=m)

    def flowdir(self, m, *args, timeout=300):
        return subprocess.run([fd, *args], env=self.envof(m), cwd=self.dir, capture_output=True, text=True, timeout=timeout)

    def must(self, m, *args):
        r = self.flowdir(m, *args)
        if r.returncode != 0:
            sys.exit(f"{m}: flowdir {' '.join(args)} failed: {r.stdout}{r.stderr}")
        return r

    # The oracle.
    def pointers(self, repo):
        """Every Git LFS pointer in the history of `repo` (all refs): {oid: size}."""
        objs = subprocess.run(["git", "-C", repo, "rev-list", "--all", "--objects"], capture_output=True, text=True).stdout.split("\n")
        ids = [line.split(" ", 1)[0] for line in objs if line]
        unknown = [i for i in ids if i not in self.pointer_cache]
        if unknown:
            check = subprocess.run(["git", "-C", repo, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
                                   input="\n".join(unknown) + "\n", capture_output=True, text=True).stdout.split("\n")
            small = []
            for line in check:
                parts = line.split()
                if len(parts) == 3:
                    if parts[1] == "blob" and int(parts[2]) < 300:
                        small.append(parts[0])
                    else:
                        self.pointer_cache[parts[0]] = None
            if small:
                out = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input="\n".join(small) + "\n",
                                     capture_output=True, text=True).stdout
                pos = 0
                for oid in small:
                    header_end = out.index("\n", pos)
                    n = int(out[pos:header_end].split()[2])
                    body = out[header_end + 1:header_end + 1 + n]
                    pos = header_end + 1 + n + 1
                    p = None
                    if body.startswith("version https://git-lfs.github.com/spec/v1\n"):
                        fields = dict(l.split(" ", 1) for l in body.strip().split("\n") if " " in l)
                        p = (fields["oid"].removeprefix("sha256:"), int(fields["size"]))
                    self.pointer_cache[oid] = p
        return {self.pointer_cache[i][0]: self.pointer_cache[i][1] for i in ids if self.pointer_cache.get(i)}

    @staticmethod
    def held(git_dir, oid, size):
        f = f"{git_dir}/lfs/objects/{oid[:2]}/{oid[2:4]}/{oid}"
        try:
            return os.path.getsize(f) == size
        except OSError:
            return False

    def check(self, label, status=True, machines=("A", "B")):
        for oid, n in self.pointers(self.hub).items():
            if not self.held(self.hub, oid, n):
                problem(f"{self.transport} {label}: the hub's history points at {oid[:12]}… ({n} bytes), not in the hub's store")
        for m, repo in self.paths.items():
            if m not in machines:
                continue
            for oid, n in self.pointers(repo).items():
                if not self.held(repo + "/.git", oid, n) and not self.held(self.hub, oid, n):
                    problem(f"{self.transport} {label}: {m}'s history points at {oid[:12]}… ({n} bytes), neither in its store nor on the hub")
        for repo in [self.hub, *self.paths.values()]:
            r = git(repo, "fsck", "--strict", "--no-dangling")
            if r.returncode != 0:
                problem(f"{self.transport} {label}: git fsck --strict {repo}: {r.stderr.strip()[:300]}")
        if status:
            for m, repo in self.paths.items():
                if killed_last[m] or m not in machines:
                    continue
                s = git(repo, "status", "--porcelain", env=self.envof(m))
                if s.stdout.strip() or s.returncode != 0:
                    problem(f"{self.transport} {label}: git status in {m}: {(s.stdout + s.stderr).strip()[:300]}")


def start(setup, m, args):
    """Starts flowdir on machine m."""
    t0 = time.time()
    p = subprocess.Popen([fd, *args], env=setup.envof(m), cwd=setup.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p, t0


def finish(p, t0, op, kill_at):
    """Kills p with SIGKILL kill_at seconds after it started (None: lets it end): (killed, exit status, output)."""
    killed = False
    if kill_at is not None:
        while time.time() - t0 < kill_at and p.poll() is None:
            time.sleep(0.002)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed = True
    try:
        out, _ = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        problem(f"{op}: did not end in 300 s")
    if not killed:
        durations[op].append(time.time() - t0)
    return killed, p.returncode, out


def kill_moment(op):
    """A random moment within what the op takes (as measured when not killed)."""
    d = durations[op]
    typical = statistics.median(d[-20:]) if d else 1.0
    return rng.uniform(0, typical * 1.1)


def step(s, i, kills_left):
    m = rng.choice(["A", "B"])
    inst = s.paths[m]
    op = rng.choices(["ingest", "sync", "get", "free", "free-both"], weights=[4, 4, 2, 2, 2])[0]
    counts[op] += 1
    kill = kills_left > 0 and rng.random() < 0.85
    killed_any = False
    if op == "free-both":
        ps = []
        for mm in ["A", "B"]:
            p, t0 = start(s, mm, ["storage", "free", s.paths[mm]])
            ps.append((p, t0, kill and rng.random() < 0.7))
        for p, t0, k in ps:
            killed, rc, out = finish(p, t0, "free", kill_moment("free") if k else None)
            killed_any |= killed
            if not killed and rc not in (0,):
                problem(f"{s.transport} step {i}: free-both: exit {rc}: {out.strip()[:300]}")
    else:
        args = {"ingest": ["rerun", inst, "big", "--downstream"], "sync": ["sync", inst],
                "get": ["storage", "get", inst, "--all"], "free": ["storage", "free", inst]}[op]
        p, t0 = start(s, m, args)
        killed, rc, out = finish(p, t0, op, kill_moment(op) if kill else None)
        killed_any |= killed
        # A rerun refused while the other machine holds the lease, or a sync whose push raced, is not a problem.
        if not killed and rc != 0 and op in ("get", "free"):
            problem(f"{s.transport} step {i}: {m} {op}: exit {rc}: {out.strip()[:300]}")
        if not killed and rc != 0 and op == "sync" and "not pushed" in out:
            problem(f"{s.transport} step {i}: {m} sync refused: {out.strip()[:300]}")
    if killed_any and op != "free-both":
        killed_last[m] = True
    elif op == "ingest" and not killed_any:
        killed_last[m] = False  # a run recovers what a kill left
    if killed_any:
        counts["killed " + op] += 1
    s.check(f"step {i} ({m} {op}{', killed' if killed_any else ''})")
    return 1 if killed_any else 0


def settle(s):
    """Final rounds: run, sync, get on both until both are on one commit."""
    for _ in range(6):
        for m in ["A", "B", "A"]:
            s.flowdir(m, "run", s.paths[m])
            r = s.flowdir(m, "sync", s.paths[m])
            if r.returncode != 0:
                time.sleep(3.2)  # the other's lease lapses
                continue
        for m in ["A", "B"]:  # the last run's lease commit reaches the other
            s.flowdir(m, "sync", s.paths[m])
        heads = {m: git(p, "rev-parse", "HEAD").stdout.strip() for m, p in s.paths.items()}
        if len(set(heads.values())) == 1:
            break
        time.sleep(3.2)
    else:
        problem(f"{s.transport}: the clones end on different commits {heads}")
    for m, p in s.paths.items():
        r = s.flowdir(m, "storage", "get", p, "--all")
        if r.returncode != 0:
            problem(f"{s.transport}: final get in {m}: {r.stdout}{r.stderr}")
        v = s.flowdir(m, "storage", "verify", p)
        if v.returncode != 0:
            problem(f"{s.transport}: storage verify in {m}: {v.stdout}{v.stderr}")
    s.check("the end")
    for repo in [s.hub, *s.paths.values()]:
        r = git(repo, "lfs", "fsck")
        if r.returncode != 0:
            problem(f"{s.transport}: git lfs fsck {repo}: {(r.stdout + r.stderr).strip()[:300]}")
    for m, p in s.paths.items():
        for node in ["big", "big2"]:
            f = f"{p}/nodes/{node}/out/out.bin"
            head = git(p, "cat-file", "-p", f"HEAD:nodes/{node}/out/out.bin").stdout
            sha = subprocess.run(["sha256sum", f], capture_output=True, text=True).stdout[:64]
            if f"oid sha256:{sha}" not in head:
                problem(f"{s.transport}: {m}'s {node} output is not the content its pointer names")


begin = time.time()
transports = ["file", "ssh"] if a.transport == "both" else [a.transport]
if "ssh" in transports:
    ssh["dir"] = work + "/sshd"
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        ssh["port"] = sock.getsockname()[1]
    start_sshd()
total_kills, steps = 0, 0
try:
    for t in transports:
        s = Setup(t, t)
        target = a.kills // len(transports)
        k = 0
        while k < target:
            k += step(s, steps, target - k)
            steps += 1
        total_kills += k
        settle(s)
        if not a.keep:
            shutil.rmtree(s.dir, ignore_errors=True)
    if not a.no_extras:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import lfsextras
        lfsextras.run(work, fd, base_env, ssh, start_sshd, stop_sshd, problem, counts, Setup, git)
finally:
    stop_sshd()
print(f"kills={total_kills} steps={steps} ops={dict(counts)} problems={len(problems)} seconds={time.time() - begin:.0f}")
for p in problems[:20]:
    print("  " + p)
if not a.keep:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if problems else 0)
