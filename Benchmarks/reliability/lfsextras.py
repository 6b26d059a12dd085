"""What a machine's surroundings do to large files (docs/storage.md), for
lfskill.py: a full disk during an ingest and during a download, and a
remote that vanishes mid-transfer. Each must give a clear error, lose
nothing, trust nothing half-written, and work once things are back.
The full disk is a small tmpfs (root, as CI runs)."""
import glob, os, shutil, subprocess, time


def run(work, fd, base_env, ssh, start_sshd, stop_sshd, problem, counts, Setup, git):
    big = 48 << 20  # the vanishing remote: large enough to be caught mid-transfer

    def flowdir(env, cwd, *args, timeout=300):
        return subprocess.run([fd, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)

    def sha256(f):
        return subprocess.run(["sha256sum", f], capture_output=True, text=True).stdout[:64]

    def objects(git_dir):
        return {os.path.basename(f): os.path.getsize(f) for f in glob.glob(git_dir + "/lfs/objects/??/??/*")}

    def trusted(git_dir, label):
        """Every object in the store is the content its name says."""
        for oid in objects(git_dir):
            f = f"{git_dir}/lfs/objects/{oid[:2]}/{oid[2:4]}/{oid}"
            if sha256(f) != oid:
                problem(f"{label}: {f} is in the store but is not its content (half-written, trusted)")

    def clear(r, label, words):
        text = r.stdout + r.stderr
        if r.returncode == 0:
            problem(f"{label}: exit 0 where it should fail: {text.strip()[:300]}")
        elif not any(w in text for w in words) or "hint:" not in text:
            problem(f"{label}: the error does not say what happened and what to do: {text.strip()[:400]}")

    def healthy(inst, env, label):
        r = git(inst, "fsck", "--strict", "--no-dangling")
        if r.returncode != 0:
            problem(f"{label}: git fsck --strict: {r.stderr.strip()[:300]}")
        s = git(inst, "status", "--porcelain", env=env)
        if s.stdout.strip():
            problem(f"{label}: git status: {s.stdout.strip()[:300]}")

    def mount(path, size):
        os.makedirs(path, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], capture_output=True, text=True)
        if r.returncode != 0:
            problem(f"mount a tmpfs (needs root): {r.stderr.strip()}")
            return False
        return True

    def fill(path, leave):
        """Fills the file system of `path` but for about `leave` bytes."""
        st = os.statvfs(path)
        free = st.f_bavail * st.f_frsize
        with open(path + "/filler", "wb") as f:
            f.write(b"\0" * max(0, free - leave))

    # 1. A full disk during an ingest: the tool's 6 MB fit, the store's copy does not.
    d = work + "/fullingest"
    if mount(d, "20m"):
        try:
            env = dict(base_env, FLOWDIR_HOST="A")
            inst = d + "/i"
            flowdir(env, work, "new", work + "/wf/t.yaml", inst, "--set", f"big.bytes={6 << 20}", "--set", "big2.bytes=600000")
            fill(d, 8 << 20)
            r = flowdir(env, work, "run", inst)
            counts["full disk: ingest"] += 1
            # The step fails; its state says why and what to do.
            state = open(inst + "/nodes/big/state.yaml").read()
            if r.returncode == 0 or "No space left" not in r.stdout + r.stderr or "hint: free space" not in state:
                problem(f"full disk during ingest: not a clear error: {(r.stdout + r.stderr).strip()[:300]} / {state[:300]}")
            healthy(inst, env, "full disk during ingest")
            trusted(inst + "/.git", "full disk during ingest")
            os.remove(d + "/filler")
            for node in ["big", "big2", "use"]:
                flowdir(env, work, "retry", inst, node)
            r = flowdir(env, work, "run", inst)
            if r.returncode != 0 or "3 succeeded" not in r.stdout:
                problem(f"full disk during ingest: once space returned, run: {r.stdout}{r.stderr}")
            head = git(inst, "cat-file", "-p", "HEAD:nodes/big/out/out.bin").stdout
            if f"oid sha256:{sha256(inst + '/nodes/big/out/out.bin')}" not in head:
                problem("full disk during ingest: once space returned, the output is not what its pointer names")
            healthy(inst, env, "full disk during ingest, space back")
            l = git(inst, "lfs", "fsck")
            if l.returncode != 0:
                problem(f"full disk during ingest: git lfs fsck: {l.stdout.strip()[:300]}")
        finally:
            subprocess.run(["umount", "-l", d])

    # 2. A full disk during a download: B's clone on a tmpfs without room for the content.
    d = work + "/fulldownload"
    s = Setup("fulldownload-hub", "file")
    if mount(d, "20m"):
        try:
            env = s.envof("B")
            inst = d + "/B"
            r = flowdir(env, work, "clone", s.url, inst)
            if r.returncode != 0:
                problem(f"full disk during download: clone: {r.stderr}")
            fill(d, 2 << 20)
            r = flowdir(env, work, "storage", "get", inst)
            counts["full disk: download"] += 1
            clear(r, "full disk during download", ["No space left", "no space"])
            healthy(inst, env, "full disk during download")
            trusted(inst + "/.git", "full disk during download")
            if not open(inst + "/nodes/big/out/out.bin", "rb").read(8).startswith(b"version "):
                problem("full disk during download: the working file is neither the pointer nor the content")
            os.remove(d + "/filler")
            r = flowdir(env, work, "storage", "get", inst)
            if r.returncode != 0:
                problem(f"full disk during download: once space returned, get: {r.stdout}{r.stderr}")
            a_out = s.paths["A"] + "/nodes/big/out/out.bin"
            if sha256(inst + "/nodes/big/out/out.bin") != sha256(a_out):
                problem("full disk during download: once space returned, B's file is not A's")
            healthy(inst, env, "full disk during download, space back")
        finally:
            subprocess.run(["umount", "-l", d])
    shutil.rmtree(s.dir, ignore_errors=True)

    def wait_for_temp(git_dir, p, timeout=60):
        """Until a temp file in git_dir/lfs/tmp has bytes (the transfer is under way) or p ends."""
        end = time.time() + timeout
        while time.time() < end and p.poll() is None:
            for f in glob.glob(git_dir + "/lfs/tmp/*"):
                try:
                    if os.path.getsize(f) > (1 << 20):
                        return True
                except OSError:
                    pass
            time.sleep(0.001)
        return False

    def kill_sshd():
        """The server and every session it forked: the remote is gone."""
        pid = ssh["pid"]
        children = subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()
        for c in [pid, *children]:
            subprocess.run(["kill", "-9", c])
        ssh["pid"] = None
        time.sleep(0.2)

    def vanish_upload(transport):
        s = Setup("vanish-" + transport, transport)
        inst, env = s.paths["A"], s.envof("A")
        # A large new output, made with the remote out of the way (run pushes at its end).
        f = inst + "/nodes/big/params.yaml"
        text = open(f).read()
        open(f, "w").write(text.replace("\nbytes: ", f"\nbytes: {big}\n# was: ", 1))
        git(inst, "remote", "rename", "origin", "away")
        r = flowdir(env, s.dir, "rerun", inst, "big", "--downstream")
        git(inst, "remote", "rename", "away", "origin")
        if r.returncode != 0:
            problem(f"vanishing remote: the rerun that makes the output: {r.stdout}{r.stderr}")
        head_before = git(s.hub, "rev-parse", "main").stdout.strip()
        p = subprocess.Popen([fd, "sync", inst], env=env, cwd=s.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        caught = wait_for_temp(s.hub, p)
        if transport == "ssh":
            kill_sshd()
        else:
            shutil.rmtree(s.hub)
        out, err = p.communicate(timeout=120)
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        counts[f"vanishing remote: {transport} upload{'' if caught else ' (not caught mid-transfer)'}"] += 1
        label = f"remote vanished during a {transport} upload"
        if not caught:
            print(f"  (the {transport} upload ended before the remote could vanish: not counted)", flush=True)
            start_sshd() if transport == "ssh" else subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", s.hub])
            return s
        clear(r, label, ["unreachable", "refused", "not pushed", "failed"])
        healthy(inst, env, label)
        if transport == "ssh":
            if git(s.hub, "rev-parse", "main").stdout.strip() != head_before:
                problem(f"{label}: the hub's branch moved though its content did not all arrive")
            trusted(s.hub, label)
            start_sshd()
        else:
            subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", s.hub], check=True)
        r = flowdir(env, s.dir, "sync", inst)
        if r.returncode != 0:
            problem(f"{label}: once it was back, sync: {r.stdout}{r.stderr}")
        # (B's history names content the first hub had: over the file URL, a new, empty hub.)
        s.check(label + ", back", machines=("A",) if transport == "file" else ("A", "B"))
        trusted(s.hub, label + ", back")
        return s

    def vanish_download(s):
        label = "remote vanished during an ssh download"
        env = s.envof("B")
        inst = s.paths["B"]
        flowdir(env, s.dir, "sync", inst)
        p = subprocess.Popen([fd, "storage", "get", inst], env=env, cwd=s.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        caught = wait_for_temp(inst + "/.git", p)
        kill_sshd()
        out, err = p.communicate(timeout=120)
        counts[f"vanishing remote: ssh download{'' if caught else ' (not caught mid-transfer)'}"] += 1
        clear(subprocess.CompletedProcess(p.args, p.returncode, out, err), label, ["unreachable", "refused", "failed"])
        healthy(inst, env, label)
        trusted(inst + "/.git", label)
        start_sshd()
        r = flowdir(env, s.dir, "storage", "get", inst)
        if r.returncode != 0:
            problem(f"{label}: once it was back, get: {r.stdout}{r.stderr}")
        if sha256(inst + "/nodes/big/out/out.bin") != sha256(s.paths["A"] + "/nodes/big/out/out.bin"):
            problem(f"{label}: once it was back, B's file is not A's")
        healthy(inst, env, label + ", back")

    vanish_upload("file")
    if ssh.get("dir"):
        s = vanish_upload("ssh")
        vanish_download(s)
