#!/usr/bin/env python3
"""`flowdir sync` against plain `git fetch` + `git push` of the same repository.

An instance whose one node has run 100 times, each run a fresh PNG of
random pixels (512x512 RGBA, stored uncompressed: 1 MiB that no zlib
shrinks), so its history holds 100 MB of images. It is pushed to a bare hub
(a file URL, or with --ssh also a real sshd on loopback) and cloned a second
time with `flowdir clone`: machine "laptop" (where the history was made, and
where every timed command runs) and machine "gpu-box" (FLOWDIR_HOST). Then,
for ROUNDS rounds each, alternating which goes first:

  nothing new    `flowdir sync` on laptop with nothing new on either side,
                 against `git fetch` + `git push` in the same repository.
  one run in     gpu-box reruns the node (one more 1 MB image; its own
                 `flowdir rerun` pushes it to the hub), then laptop syncs it
                 in: `flowdir sync` against `git fetch` + `git merge
                 --ff-only` + `git push`.
  one run out    laptop reruns the node with no remote (so nothing is
                 pushed), then `flowdir sync` pushes it: against `git fetch`
                 + `git push`.

In the last two each tool gets its own copy of the laptop's instance and of
the hub, made (`cp -a`) from one prepared state just before the round, so
both move the same commits and bytes over the same transport, from and into
repositories laid out alike. The copies' git index is refreshed after
copying (a copy's inodes and ctimes differ from the ones the index cached;
without it both tools would re-hash the working tree) and the disk is
synced before any timing. A round checks that both tools end on the same
commits.

The git figures are also given for the steps `flowdir sync` itself took:
with nothing to send it does not push (it fetches, merges what came, and
pushes only what there is to push), while the issue compares it with
fetch + push. So: nothing new, `git fetch`; one run in, `git fetch` + `git
merge --ff-only`; one run out, `git fetch` + `git push`.

usage: sync.py [--rounds 7] [--runs 100] [--ssh] [--flowdir BIN] [--keep DIR]
  (default BIN: a release build, `scripts/release-build.sh`; the work
  folder is made in TMPDIR, default /tmp)
"""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--runs", type=int, default=100, help="runs of 1 MB in the instance's history")
ap.add_argument("--ssh", action="store_true", help="also over ssh to a real sshd on loopback (scripts/sshd-local.sh)")
ap.add_argument("--flowdir")
ap.add_argument("--keep", help="work in this folder and leave it")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fd = a.flowdir or subprocess.run(["bash", root + "/scripts/release-build.sh", "--product", "flowdir"], check=True,
                                 capture_output=True, text=True).stdout.strip() + "/flowdir"
fd = os.path.abspath(fd)
work = os.path.abspath(a.keep or tempfile.mkdtemp(prefix="flowdir-syncbench-"))
os.makedirs(work + "/wf/tools", exist_ok=True)
os.makedirs(work + "/config/flowdir", exist_ok=True)
os.makedirs(work + "/.old", exist_ok=True)

# The tool: a valid PNG (IHDR, one IDAT of stored deflate blocks, IEND) of random RGBA pixels.
open(work + "/wf/tools/noise.py", "w").write('''import os, struct, sys, zlib
w = h = 512
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
raw = b"".join(b"\\0" + os.urandom(4 * w) for _ in range(h))
png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))
open(sys.argv[1], "wb").write(png)
''')
open(work + "/wf/tools/Noise.yaml", "w").write(
    "kind: Noise\nsummary: A PNG of 512x512 random pixels (1 MiB, incompressible)\n"
    "outputs: { image: { type: ImageRef, ext: png } }\n"
    "run:\n  command: [python3, \"{tool.dir}/noise.py\", \"{outputs.image}\"]\n")
open(work + "/wf/noise.yaml", "w").write(
    "schema: app.workflow/v2\nname: Noise\nnodes:\n  - { id: img, kind: Noise }\n")
# A short lease: the two machines take turns running the node.
lease = 2.0
open(work + "/config/flowdir/config.yaml", "w").write(f"sync: {{ lease: {lease:g}s }}\n")
env = dict(os.environ, XDG_CONFIG_HOME=work + "/config", XDG_STATE_HOME=work + "/state", GIT_TERMINAL_PROMPT="0")
env.pop("FLOWDIR_CONFIG", None)


def run(args, host="laptop", check=True, cwd=None, extra=None):
    r = subprocess.run(args, cwd=cwd or work, env=dict(env, FLOWDIR_HOST=host, **(extra or {})), capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def git(repo, *args, check=True, extra=None):
    return run(["git", "-C", repo, *args], check=check, extra=extra)


def head(repo, ref="HEAD"):
    return git(repo, "rev-parse", ref).stdout.strip()


def runs(inst):
    return len(os.listdir(inst + "/nodes/img/runs")) if os.path.isdir(inst + "/nodes/img/runs") else 0


def one_more_run(inst, host):
    """`flowdir rerun` of the node, once the other machine's lease has lapsed."""
    before = runs(inst)
    for _ in range(20):
        r = run([fd, "rerun", inst, "img"], host=host, check=False)
        if runs(inst) > before:
            return
        time.sleep(lease / 2)
    sys.exit(f"{inst}: rerun made no run:\n{r.stdout}{r.stderr}")


def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()[0])


def packs(repo):
    d = (repo if repo.endswith(".git") else repo + "/.git") + "/objects/pack"
    return len([f for f in os.listdir(d) if f.endswith(".pack")])


def aside(*paths):
    # Moved, not deleted, until the end: an ext4 without a journal (/tmp here)
    # scans past recently freed inodes for new ones (Benchmarks/rounds.sh).
    for p in paths:
        if os.path.exists(p):
            os.rename(p, f"{work}/.old/{os.path.basename(p)}.{time.time_ns()}")


def timed(args, cwd=None, extra=None):
    t = time.perf_counter()
    r = subprocess.run(args, cwd=cwd or work, env=dict(env, FLOWDIR_HOST="laptop", **(extra or {})), capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return ms, r.stdout


# --- The instance and its history: RUNS runs of 1 MB on the laptop, before it has a remote.
fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", work], capture_output=True, text=True).stdout.strip() or "?"
print(f"flowdir {run([fd, '--version']).stdout.strip()}, {work} on {fs}, git {run(['git', '--version']).stdout.split()[-1]}", flush=True)
inst = work + "/laptop/noise"
t0 = time.time()
run([fd, "new", "wf/noise.yaml", inst])
run([fd, "run", inst])
while runs(inst) < a.runs:
    one_more_run(inst, "laptop")
print(f"made {runs(inst)} runs in {time.time() - t0:.0f} s: .git {du(inst + '/.git') / 1e6:.0f} MB in {packs(inst)} packs, "
      f"{git(inst, 'rev-list', '--count', 'HEAD').stdout.strip()} commits, image {os.path.getsize(inst + '/nodes/img/out/image.png')} bytes", flush=True)

ssh_env = {}
sshd_pid = None
transports = ["file"] + (["ssh"] if a.ssh else [])


def url(transport, hub):
    return ("flowdir-test:" if transport == "ssh" else "file://") + hub


def median_min(xs):
    return f"{statistics.median(xs):7.1f} / {min(xs):6.1f}"


results = []  # (transport, case, flowdir ms list, git ms list, ms list of git's steps that sync took)
try:
    if a.ssh:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        sshd_pid = subprocess.run(["bash", root + "/scripts/sshd-local.sh", "start", work + "/ssh", str(port)],
                                  check=True, capture_output=True, text=True).stdout.strip()
        ssh_env = {"GIT_SSH_COMMAND": f"ssh -F {work}/ssh/ssh_config"}
        env.update(ssh_env)

    for transport in transports:
        tdir = f"{work}/over-{transport}"
        hub = tdir + "/hub.git"
        os.makedirs(tdir)
        git(work, "init", "--quiet", "--bare", hub)
        a_inst, b_inst = tdir + "/laptop", tdir + "/gpu-box"
        shutil.copytree(inst, a_inst, symlinks=True)
        git(a_inst, "update-index", "-q", "--refresh", check=False)
        git(a_inst, "remote", "add", "origin", url(transport, hub))
        t = time.time()
        run([fd, "sync", a_inst])
        pushed = time.time() - t
        t = time.time()
        run([fd, "clone", url(transport, hub), b_inst], host="gpu-box")
        print(f"{transport}: first sync (push of the whole history) {pushed:.1f} s, flowdir clone {time.time() - t:.1f} s; "
              f"hub {du(hub) / 1e6:.0f} MB in {packs(hub)} pack(s)", flush=True)

        # Nothing new: both in the laptop's instance itself (neither changes anything).
        fl, gi, gn = [], [], []
        timed([fd, "sync", a_inst])  # once each first, untimed
        timed(["git", "-C", a_inst, "fetch", "--quiet", "origin"])
        for i in range(a.rounds):
            for tool in (["flowdir", "git"] if i % 2 == 0 else ["git", "flowdir"]):
                if tool == "flowdir":
                    ms, out = timed([fd, "sync", a_inst])
                    if "up to date" not in out:
                        sys.exit(f"nothing new, but: {out}")
                    fl.append(ms)
                else:
                    f_ms, _ = timed(["git", "-C", a_inst, "fetch", "--quiet", "origin"])
                    p_ms, _ = timed(["git", "-C", a_inst, "push", "--quiet", "origin", "main"])
                    gi.append(f_ms + p_ms)
                    gn.append(f_ms)  # sync pushes nothing here
        results.append((transport, "nothing new", fl, gi, gn))

        # One run in, one run out: each tool on its own copy of one prepared state.
        for case in ["one run in", "one run out"]:
            fl, gi, gn = [], [], []
            for i in range(a.rounds):
                if case == "one run in":
                    one_more_run(b_inst, "gpu-box")  # its rerun pushes it
                else:
                    # Made with no remote, as if offline: nothing pushed.
                    git(a_inst, "remote", "remove", "origin")
                    one_more_run(a_inst, "laptop")
                    git(a_inst, "remote", "add", "origin", url(transport, hub))
                    git(a_inst, "fetch", "--quiet", "origin")
                copies = {}
                for tool in ["flowdir", "git"]:
                    c_inst, c_hub = f"{tdir}/{tool}-laptop", f"{tdir}/{tool}-hub.git"
                    subprocess.run(["cp", "-a", a_inst, c_inst], check=True)
                    subprocess.run(["cp", "-a", hub, c_hub], check=True)
                    git(c_inst, "remote", "set-url", "origin", url(transport, c_hub))
                    git(c_inst, "update-index", "-q", "--refresh", check=False)
                    copies[tool] = (c_inst, c_hub)
                os.sync()
                for tool in (["flowdir", "git"] if i % 2 == 0 else ["git", "flowdir"]):
                    c_inst, c_hub = copies[tool]
                    if tool == "flowdir":
                        ms, out = timed([fd, "sync", c_inst])
                        if not re.search(r"\d+ commits? in" if case == "one run in" else r"\d+ out", out):
                            sys.exit(f"{case}, but: {out}")
                        fl.append(ms)
                    else:
                        f_ms, _ = timed(["git", "-C", c_inst, "fetch", "--quiet", "origin"])
                        m_ms = 0.0
                        if case == "one run in":
                            m_ms, _ = timed(["git", "-C", c_inst, "merge", "--quiet", "--ff-only", "origin/main"])
                        p_ms, _ = timed(["git", "-C", c_inst, "push", "--quiet", "origin", "main"])
                        gi.append(f_ms + m_ms + p_ms)
                        gn.append(f_ms + m_ms if case == "one run in" else f_ms + p_ms)  # the steps sync took
                # The same ends: both copies and both hubs on one commit, the working trees clean.
                (f_inst, f_hub), (g_inst, g_hub) = copies["flowdir"], copies["git"]
                ends = {head(f_inst), head(g_inst), head(f_hub, "main"), head(g_hub, "main")}
                dirty = git(f_inst, "status", "--porcelain").stdout + git(g_inst, "status", "--porcelain").stdout
                if len(ends) != 1 or dirty.strip():
                    sys.exit(f"{case}: the tools ended apart: {ends} {dirty}")
                aside(f_inst, f_hub, g_inst, g_hub)
                run([fd, "sync", a_inst])  # the laptop's own instance brought up to date for the next round
            results.append((transport, case, fl, gi, gn))
        print(f"{transport}: laptop's .git now {du(a_inst + '/.git') / 1e6:.0f} MB in {packs(a_inst)} packs, "
              f"{runs(a_inst)} runs", flush=True)
finally:
    if sshd_pid:
        subprocess.run(["bash", root + "/scripts/sshd-local.sh", "stop", sshd_pid])

print(f"\n{a.rounds} rounds each; ms, median / min; ratio of medians")
print(f"{'transport':9}  {'case':12}  {'flowdir sync':>16}  {'git fetch (+merge) + push':>25}  {'ratio':>6}  {'git, as sync did':>20}  {'ratio':>6}")
for transport, case, fl, gi, gn in results:
    print(f"{transport:9}  {case:12}  {median_min(fl):>16}  {median_min(gi):>25}  {statistics.median(fl) / statistics.median(gi):5.2f}x"
          f"  {median_min(gn):>20}  {statistics.median(fl) / statistics.median(gn):5.2f}x")
if not a.keep:
    shutil.rmtree(work, ignore_errors=True)
