#!/usr/bin/env python3
"""An answer dropped into a *cold* instance's inbox → its commit, p50 and
p99, under `flowdir watch`, for one or more builds in one run.

Cold: the watcher closed the instance (its lock let go, nothing of it in
memory) before the answer came. An instance stays open 1.5 s after its
last event (docs/engine.md); the drops go round-robin over INSTANCES
instances, GAP seconds apart, so each instance is dropped into every
INSTANCES × GAP seconds (2.4 s by default): always after it closed. Each
answer also starts the downstream node, whose job is `true`.

WORKDIR defaults to /var/tmp (ext4 here: where people's instances are,
and where a commit's renames cost what they do on a disk, unlike tmpfs).
Builds are measured in turns (A B B A …) on their own copies of the same
instances, so the VM's slow stretches fall on both alike.

usage: inbox-cold.py [--drops N] [--instances K] [--gap S] [--workdir DIR] FLOWDIR...
   e.g. python3 Benchmarks/inbox-cold.py /tmp/flowdir-old .build/release/flowdir
"""
import json, os, shutil, subprocess, sys, tempfile, time

args = sys.argv[1:]
def option(name, default, kind):
    if name in args:
        i = args.index(name)
        value = kind(args[i + 1])
        del args[i:i + 2]
        return value
    return default
drops = option("--drops", 200, int)
instances = option("--instances", 24, int)
gap = option("--gap", 0.1, float)
workdir = option("--workdir", "/var/tmp", str)
if not args:
    sys.exit(__doc__)
builds = [os.path.abspath(b) for b in args]
per = (drops + instances - 1) // instances
rounds = 2  # each build twice, A B B A: drops/2 answers a turn

work = tempfile.mkdtemp(prefix="flowdir-inbox-cold-", dir=workdir)
env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent", FLOWDIR_CONFIG="", XDG_STATE_HOME=work + "/state")

def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def wait_log(log, message, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for line in open(log):
            try:
                if json.loads(line).get("message") == message:
                    return
            except ValueError:
                pass
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for '{message}' in {log}")

try:
    os.makedirs(work + "/wf/tools")
    with open(work + "/wf/tools/Done.yaml", "w") as f:
        f.write("kind: Done\ninputs: { image: ImageRef }\noutputs: { out: TextRef? }\nrun:\n  command: [\"true\"]\n")
    with open(work + "/wf/t.yaml", "w") as f:
        f.write("schema: app.workflow/v2\nname: Cold\nnodes:\n")
        for i in range(per):
            f.write(f"  - {{ id: p{i}, kind: UserAssetPicker, outputs: {{ image: ImageRef }} }}\n  - {{ id: s{i}, kind: Done }}\n")
        f.write("edges:\n" + "".join(f"  - p{i}.image -> s{i}.image\n" for i in range(per)))
    subprocess.run(["convert", "-size", "64x64", "xc:gray", work + "/photo.png"], check=True)
    # One set of instances, asked their questions once, copied for each build's turns.
    master = work + "/master"
    flowdir0 = builds[0]
    for k in range(instances):
        subprocess.run([flowdir0, "new", work + "/wf/t.yaml", f"{master}/i{k}"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([flowdir0, "run", f"{master}/i{k}"], env=env, stdout=subprocess.DEVNULL)

    results = {b: [] for b in builds}
    order = []
    for r in range(rounds):
        order += builds if r % 2 == 0 else list(reversed(builds))
    for turn, build in enumerate(order):
        root = f"{work}/turn{turn}"
        shutil.copytree(master, root, symlinks=True)
        log = f"{work}/turn{turn}.log"
        proc = subprocess.Popen([build, "watch", root, "--json-logs", "--log-level", "debug"], env=env,
                                stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        wait_log(log, "ready")
        time.sleep(2.0)  # everything opened at start-up closes first
        dropped = []
        for d in range(drops // rounds):
            k, i = d % instances, d // instances
            src = f"{work}/staged-{turn}-{d}.png"
            shutil.copy(work + "/photo.png", src)
            t0 = time.time()
            os.rename(src, f"{root}/i{k}/inbox/p{i}.image.png")
            dropped.append((i, t0))
            time.sleep(gap)
        time.sleep(1.5)
        proc.terminate()
        proc.wait()
        commits = []
        for line in open(log):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            s = e.get("summary", "")
            if e.get("message") == "commit" and s.startswith("Answer p"):
                commits.append((int(s.split()[1][1:]), float(e["t"])))
        # Answers go out one at a time, GAP apart: each drop's commit is the first of its question after it.
        used = set()
        for i, t0 in dropped:
            match = next((n for n, (q, t) in enumerate(commits) if q == i and t >= t0 and n not in used), None)
            if match is not None:
                used.add(match)
                results[build].append((commits[match][1] - t0) * 1000)
        shutil.rmtree(root, ignore_errors=True)

    fs = subprocess.run(["stat", "-f", "-c", "%T", work], capture_output=True, text=True).stdout.strip()
    print(f"{drops // rounds} drops a turn, {rounds} turns a build, {instances} instances, {gap * 1000:.0f} ms apart, on {fs} ({workdir})")
    for build in builds:
        xs = results[build]
        if not xs:
            print(f"{build:40s} no answer committed")
            continue
        print(f"{build:40s} answered {len(xs)}/{drops // rounds * rounds}   rename -> answer commit  p50 {percentile(xs, 50):6.2f} ms   p99 {percentile(xs, 99):6.2f} ms")
finally:
    shutil.rmtree(work, ignore_errors=True)
