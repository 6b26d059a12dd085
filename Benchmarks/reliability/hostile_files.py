"""hostile.py's inputs: instance files a collaborator could commit, and the command line."""
import os, shutil, stat, subprocess

CRASH_MARKS = (b"Fatal error", b"Stack dump", b"Segmentation fault", b"Illegal instruction", b"Trace/breakpoint trap")


def crash_of(rc, out):
    """Why a command's end counts as a crash (a signal, a trap, a hang), or None."""
    if rc is None:
        return "hung (killed after its time limit)"
    if rc < 0:
        return f"killed by signal {-rc}"
    mark = next((m for m in CRASH_MARKS if m in out), None)
    return f"exit {rc}: {mark.decode()}" if mark else None


def write(path, data, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path) and not os.path.isdir(path):
        os.unlink(path)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def replace_link(path, target):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def replace_fifo(path):
    if os.path.lexists(path):
        os.unlink(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mkfifo(path)


def edit(path, old, new):
    text = open(path).read()
    write(path, text.replace(old, new) if old in text else text + new)


def request(inst, name, text):
    write(f"{inst}/.flowdir/requests/{name}.request.yaml", text)


POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                                                      for p, c in zip("abcdefgh", "bcdefghi")) + "text: *i\n"


def file_cases(rig):
    """(name, mutate(inst), commit?, extra commands). The instance is wf/pair.yaml, run once:
    a and b succeeded, look awaiting; `pick` is not there, so answers go to look."""
    sec = rig.cfg + "/secrets.yaml"
    P = lambda i: i + "/nodes/a/params.yaml"
    return [
        ("params.yaml a link to secrets.yaml", lambda i: replace_link(P(i), sec), True, ()),
        ("params.yaml a relative link out of the instance", lambda i: replace_link(P(i), "../../../../home/.config/flowdir/secrets.yaml"), True, ()),
        ("params.yaml a link to /etc/shadow", lambda i: replace_link(P(i), "/etc/shadow"), True, ()),
        ("a node's folder a link to ~/.config/flowdir", lambda i: replace_link(i + "/nodes/a", rig.cfg), True, ()),
        ("workflow.yaml a link to secrets.yaml", lambda i: replace_link(i + "/workflow.yaml", sec), True, ()),
        ("instance.yaml a link to secrets.yaml", lambda i: replace_link(i + "/instance.yaml", sec), True, ()),
        ("tools/ a link to ~/.config/flowdir/tools", lambda i: replace_link(i + "/tools", rig.cfg + "/tools"), True, ()),
        ("an await file a link to secrets.yaml", lambda i: replace_link(i + "/inbox/look.await.yaml", sec), True, ()),
        ("state.yaml a link to secrets.yaml", lambda i: replace_link(i + "/nodes/a/state.yaml", sec), True, ()),
        ("an output a link to secrets.yaml, its consumer rerun", lambda i: replace_link(i + "/nodes/a/out/out.txt", sec), True, (("rerun", "{i}/b"),)),
        ("out/ a link to ~/.config/flowdir", lambda i: replace_link(i + "/nodes/a/out", rig.cfg), True, (("rerun", "{i}/b"),)),
        ("run.yaml and log.txt links to secrets.yaml", lambda i: (replace_link(i + "/nodes/a/runs/1/run.yaml", sec),
                                                                   replace_link(i + "/nodes/a/runs/1/log.txt", sec)), True, (("logs", "{i}", "a"),)),
        ("inbox/done a link to ~/.config/flowdir", lambda i: replace_link(i + "/inbox/done", rig.cfg), True, ()),
        (".gitattributes a link to secrets.yaml", lambda i: replace_link(i + "/.gitattributes", sec), True, ()),
        ("an answer file a link to secrets.yaml", lambda i: replace_link(i + "/inbox/look.choice.json", sec), False, ()),
        ("params.yaml a FIFO", lambda i: replace_fifo(P(i)), False, ()),
        ("workflow.yaml a FIFO", lambda i: replace_fifo(i + "/workflow.yaml"), False, ()),
        ("an await file a FIFO", lambda i: replace_fifo(i + "/inbox/look.await.yaml"), False, ()),
        ("a request file a FIFO", lambda i: replace_fifo(i + "/.flowdir/requests/x.request.yaml"), False, ()),
        ("params.yaml a folder", lambda i: (os.unlink(P(i)), os.makedirs(P(i))), False, ()),
        ("params.yaml /dev/zero (a device)", lambda i: (os.unlink(P(i)), os.mknod(P(i), 0o644 | stat.S_IFCHR, os.makedev(1, 5))), False, ()),
        ("params width: 1e999", lambda i: write(P(i), "width: 1e999\n"), True, ()),
        ("params width: 10^26", lambda i: write(P(i), "width: 99999999999999999999999999\n"), True, ()),
        ("params .nan and !!binary", lambda i: write(P(i), "width: .nan\ntext: !!binary AAEC\n"), True, ()),
        ("params nested 10,000 deep", lambda i: write(P(i), "text: " + "[" * 10000 + "]" * 10000 + "\n"), True, ()),
        ("params a YAML bomb", lambda i: write(P(i), BOMB), True, ()),
        ("params invalid UTF-8, NUL, BOM", lambda i: write(P(i), b"\xef\xbb\xbftext: \"a\x00\xff\xfe\"\n"), True, ()),
        ("params 20 MB", lambda i: write(P(i), "text: " + "x" * 20_000_000 + "\n"), True, ()),
        ("expiresIn PT99999999999999999H", lambda i: edit(i + "/workflow.yaml", "expiresIn: 1h", "expiresIn: PT99999999999999999H"), True, ()),
        ("expiresIn 99999999999999999999s", lambda i: edit(i + "/workflow.yaml", "expiresIn: 1h", "expiresIn: 99999999999999999999s"), True, ()),
        ("expiresIn 1e400s", lambda i: edit(i + "/workflow.yaml", "expiresIn: 1h", "expiresIn: 1e400s"), True, ()),
        ("concurrency 10^30 and timeout 10^20s", lambda i: edit(i + "/workflow.yaml", "edges:", "options: { concurrency: { local: 1000000000000000000000000000000 }, timeout: 99999999999999999999s }\nedges:"), True, ()),
        ("a node id ../../outside/x", lambda i: edit(i + "/workflow.yaml", "id: a,", "id: ../../outside/x,"), True, ()),
        ("a node id with a newline and escapes", lambda i: edit(i + "/workflow.yaml", "id: a,", "id: \"a\\nb\\e[2J\","), True, ()),
        ("workflow.yaml nested 10,000 deep", lambda i: write(i + "/workflow.yaml", "nodes: " + "[" * 10000 + "]" * 10000 + "\n"), True, ()),
        ("workflow.yaml a YAML bomb", lambda i: write(i + "/workflow.yaml", "schema: app.workflow/v2\nname: x\n" + BOMB.replace("text:", "nodes:")), True, ()),
        ("state.yaml run 10^20, progress .nan, a bad date", lambda i: write(i + "/nodes/a/state.yaml", "state: succeeded\nrun: 99999999999999999999\nprogress: .nan\nupdatedAt: 99999-99-99T99:99:99Z\n"), True, ()),
        ("state.yaml an unknown state, run -1", lambda i: write(i + "/nodes/b/state.yaml", "state: pwned\nrun: -1\n"), True, ()),
        ("run.yaml absurd numbers and shell", lambda i: write(i + "/nodes/a/runs/1/run.yaml", "run: 1e99\nexitCode: 1e99\nstartedAt: 99999-01-01T00:00:00Z\nduration: .nan\njob: \"$(touch /tmp/x)\"\noutputs: " + "[" * 5000 + "]" * 5000 + "\n"), True, ()),
        ("await file: absurd dates and counts", lambda i: edit(i + "/inbox/look.await.yaml", "snooze: { until: null, count: 0 }", "snooze: { until: 99999-12-31T99:99:99Z, count: 1e30 }\nexpiresAt: 1e400"), True, ()),
        ("await file: a choice with escapes and a newline", lambda i: edit(i + "/inbox/look.await.yaml", "", "choice: \"warm\\n\\e]0;pwned\\a\\e[2J\"\n"), False, ()),
        ("await file: a 1 MB choice", lambda i: edit(i + "/inbox/look.await.yaml", "", "choice: " + "w" * 1_000_000 + "\n"), False, ()),
        ("request: snooze 1e19 s", lambda i: request(i, "a", "verb: snooze\nnode: look\nby: mallory\nduration: 1e19\n"), False, ()),
        ("request: snooze .nan, -5, .inf", lambda i: [request(i, f"n{k}", f"verb: snooze\nnode: look\nby: m\nduration: {v}\n") for k, v in enumerate((".nan", "-5", ".inf"))], False, ()),
        ("request: an unknown verb, node ../../x", lambda i: request(i, "b", "verb: pwn\nnode: ../../outside/x\nby: m\n"), False, ()),
        ("request: garbage, empty, a bomb", lambda i: (request(i, "c", "\xff\x00\x01"), request(i, "d", ""), request(i, "e", BOMB)), False, ()),
        ("request: a link to secrets.yaml", lambda i: replace_link(i + "/.flowdir/requests/f.request.yaml", sec), False, ()),
        ("instance.yaml: schemaVersion 10^20, a lease in year 99999", lambda i: edit(i + "/instance.yaml", "", "schemaVersion: 99999999999999999999\nlease: { holder: x, until: 99999-01-01T00:00:00Z }\n"), True, ()),
        ("instance.yaml: a title of escapes, 100 KB", lambda i: edit(i + "/instance.yaml", "title: Pair", "title: \"\\e]52;c;cHduZWQ=\\a\\e[2J" + "t" * 100_000 + "\""), True, (("ls", "{root}"),)),
        ("a bogus LFS pointer (size 10^20) and its .gitattributes line", lambda i: (write(i + "/nodes/a/out/out.txt", POINTER.format(oid="0" * 64, size="99999999999999999999")),
                                                                                      write(i + "/.gitattributes", "/nodes/a/out/out.txt filter=lfs diff=lfs merge=lfs -text\n")), True, (("rerun", "{i}/b"),)),
        ("an LFS pointer whose oid is a path", lambda i: (write(i + "/nodes/a/out/out.txt", POINTER.format(oid="../../../../home/.config/flowdir/secrets.yaml", size="10")),
                                                          write(i + "/.gitattributes", "/nodes/a/out/out.txt filter=lfs diff=lfs merge=lfs -text\n")), True, (("rerun", "{i}/b"),)),
        ("an LFS pointer with a negative size", lambda i: write(i + "/nodes/a/out/out.txt", POINTER.format(oid="a" * 64, size="-1")), True, (("rerun", "{i}/b"),)),
        (".gitattributes: a pattern, a 100 KB line, a macro", lambda i: write(i + "/.gitattributes", "* filter=lfs diff=lfs merge=lfs -text\n/" + "x" * 100_000 + " filter=lfs\n[attr]evil filter=lfs\n/../../x filter=lfs\n"), True, ()),
        ("a private tool with a timeout of 10^20 s", lambda i: write(i + "/tools/Note.yaml", open(rig.work + "/wf/tools/Note.yaml").read() + "timeout: 99999999999999999999s\n"), True, (("rerun", "{i}/a"),)),
    ]


def files(rig, t, quick):
    cat = "files"
    cases = file_cases(rig)
    for n, (name, mutate, commit, extra) in enumerate(cases):
        if quick and n % 4:
            continue
        inst = f"{rig.work}/root/h{n:02d}"
        rc, out = rig.flowdir("new", "wf/pair.yaml", inst)
        rig.flowdir("run", inst)
        try:
            mutate(inst)
        except OSError as e:
            t.add(cat, name, crash=f"could not set up the case: {e}")
            continue
        if commit:
            rig.git(inst, "add", "-A")
            rig.git(inst, "commit", "-qm", "a collaborator's change")
        crash, outputs = None, b""
        for args in [("run", inst), ("show", inst), ("check", inst), ("history", inst)] + [tuple(a.format(i=inst, root=rig.work + "/root") for a in x) for x in extra]:
            rc, out = rig.flowdir(*args, timeout=60)
            outputs += out
            crash = crash or (crash_of(rc, out) and f"flowdir {args[0]}: {crash_of(rc, out)}")
        # flowdir serve reads it too: the list, the detail, the file and the log.
        iid = rig.instance_id(inst)
        auth = {"Authorization": "Bearer " + rig.stoken}
        for path in ["/api/instances", f"/api/instances/{iid}", f"/api/instances/{iid}/files/nodes/a/out/out.txt",
                     f"/api/instances/{iid}/thumbs/nodes/a/out/out.txt", f"/api/instances/{iid}/nodes/a/log", "/api/inbox"]:
            outputs += rig.sh.request("GET", path, auth, timeout=30)[2]
        crash = crash or rig.alive("serve")
        objs = subprocess.run(["git", "-C", inst, "cat-file", "--batch-all-objects", "--batch"], capture_output=True).stdout
        leaked = rig.leaks(outputs) + [f"{s} (committed)" for s in rig.leaks(objs)]
        t.add(cat, name, crash=crash, secret=", ".join(leaked) or None,
              change=("wrote outside the instance: " + str(os.listdir(rig.work + "/outside"))) if os.listdir(rig.work + "/outside") else None)
        # FIFOs and devices are not left for later scans to block on.
        for base, dirs, names in os.walk(inst):
            for x in names:
                p = os.path.join(base, x)
                if not os.path.islink(p) and os.path.exists(p) and not stat.S_ISREG(os.lstat(p).st_mode):
                    os.unlink(p)
    rc, out = rig.flowdir("ls", rig.work + "/root")
    rc2, out2 = rig.flowdir("status")
    t.add(cat, "ls and status over all of them", crash=crash_of(rc, out) or crash_of(rc2, out2), secret=", ".join(rig.leaks(out + out2)) or None)


def cli(rig, t, quick):
    cat, w = "cli", rig.work
    rr = w + "/root/rr"
    sec = rig.cfg + "/secrets.yaml"
    write(w + "/cli/open-token", "a-token-others-can-read-0123456789\n")
    os.chmod(w + "/cli/open-token", 0o644)
    write(w + "/cli/weak-token", "aaaaaaaaaaaaaaaaaaaaaaaaaa\n")
    os.chmod(w + "/cli/weak-token", 0o600)
    replace_link(w + "/cli/link-token", w + "/js/token")
    replace_fifo(w + "/cli/fifo")
    write(w + "/cli/open-secrets.yaml", open(sec).read())
    os.chmod(w + "/cli/open-secrets.yaml", 0o644)
    replace_link(w + "/cli/link-secrets.yaml", sec)
    write(w + "/cli/bomb.yaml", BOMB)
    pwned = w + "/outside/pwned-by-argv"
    for name, cfg in [("huge", "pollInterval: 1e999s\nhookTimeout: .nan\nanswerSizeLimit: 1e30\nleaseDuration: 99999999999999999999s\n"),
                      ("negative", "answerSizeLimit: -1\nhookTimeout: -5s\nroots: [" + "[" * 5000 + "]" * 5000 + "]\n")]:
        write(f"{w}/cli/config-{name}.yaml", cfg)
    J = ["jobserver", "--port", "0", "--dir", w + "/cli/js"]
    S = ["serve", w + "/root", "--port", "0", "--no-watch"]
    cases = []
    for d in ["99999999999999999999s", "1e19s", "nan", "inf", "-1s", "", "PT99999999999999999H", "P9999999999Y", "1h" * 5000, "١h", "0s",
              "9223372036854775807s", "9223372036854775808ms", "1e-300s", "\x1b[2J"]:
        cases.append((f"snooze --for {d[:30]!r}", ["snooze", rr + "/look", "--for", d], {}))
    for ch in ["warm\nevil: 1", "w" * 100_000, "\x1b]0;pwned\x07"]:
        cases.append((f"answer --choice {ch[:20]!r}", ["answer", rr + "/look", "--choice", ch], {}))
    cases += [
        ("answer a target with ../", ["answer", rr + "/../../outside/x/look", "--choice", "warm"], {}),
        ("answer the target -", ["answer", "-", "--choice", "warm"], {}),
        ("answer with secrets.yaml as the file", ["answer", w + "/root/done/look", sec], {}),
        ("new named a\\nb", ["new", "wf/pair.yaml", "root/a\nb"], {}),
        ("new named 300 characters", ["new", "wf/pair.yaml", "root/" + "x" * 300], {}),
        ("new named -rf", ["new", "wf/pair.yaml", "root/-rf"], {}),
        ("new with a 100 KB title of escapes", ["new", "wf/pair.yaml", "root/titled", "--title", "\x1b]52;c;eA==\x07" + "t" * 100_000], {}),
        ("new of secrets.yaml", ["new", sec, "root/from-secrets"], {}),
        ("new of a YAML bomb", ["new", w + "/cli/bomb.yaml", "root/bomb"], {}),
        ("new of a FIFO", ["new", w + "/cli/fifo", "root/fifo"], {}),
        ("check a FIFO", ["check", w + "/cli/fifo"], {}),
        ("check /dev/zero", ["check", "/dev/zero"], {}),
        ("show /etc", ["show", "/etc"], {}), ("show /dev/null", ["show", "/dev/null"], {}), ("show secrets.yaml", ["show", sec], {}),
        ("show ~/.config/flowdir", ["show", rig.cfg], {}), ("show 5000 arguments", ["show"] + [rr] * 5000, {}),
        ("show invalid UTF-8", [b"show", b"\xff\xfe/\x80"], {}), ("an unknown command of escapes", ["\x1b[2J", "--x"], {}),
        ("clone --upload-pack", ["clone", f"--upload-pack=touch {pwned}", w + "/outside/c1"], {}),
        ("clone -- --upload-pack", ["clone", "--", f"--upload-pack=touch {pwned}", w + "/outside/c2"], {}),
        ("clone of ext::", ["clone", f"ext::sh -c touch% {pwned}", w + "/outside/c3"], {}),
        ("sync with a remote of --exec", ["sync", rr, "--remote", f"--exec=touch {pwned}"], {}),
        ("FLOWDIR_NOW garbage", ["ls", w + "/root"], {"FLOWDIR_NOW": "\x1b[2Jgarbage"}),
        ("FLOWDIR_NOW year 99999", ["ls", w + "/root"], {"FLOWDIR_NOW": "99999-01-01T00:00:00Z"}),
        ("FLOWDIR_CONFIG a FIFO", ["ls", w + "/root"], {"FLOWDIR_CONFIG": w + "/cli/fifo"}),
        ("FLOWDIR_CONFIG /dev/zero", ["ls", w + "/root"], {"FLOWDIR_CONFIG": "/dev/zero"}),
        ("a config of absurd numbers", ["run", w + "/root/done"], {"FLOWDIR_CONFIG": w + "/cli/config-huge.yaml"}),
        ("a config of negative numbers, deep nesting", ["run", w + "/root/done"], {"FLOWDIR_CONFIG": w + "/cli/config-negative.yaml"}),
        ("secrets.yaml others can read", ["run", w + "/root/done"], {"FLOWDIR_SECRETS": w + "/cli/open-secrets.yaml"}),
        ("secrets.yaml a link", ["run", w + "/root/done"], {"FLOWDIR_SECRETS": w + "/cli/link-secrets.yaml"}),
        ("secrets.yaml a FIFO", ["run", w + "/root/done"], {"FLOWDIR_SECRETS": w + "/cli/fifo"}),
        ("lfs smudge of a pointer of size 10^20", ["lfs", "smudge", "x"], {"stdin": POINTER.format(oid="0" * 64, size="99999999999999999999").encode()}),
        ("lfs smudge of a pointer whose oid is a path", ["lfs", "smudge", "x"], {"stdin": POINTER.format(oid="../../../home/.config/flowdir/secrets.yaml", size="9").encode()}),
        ("lfs smudge of 1 MB of noise", ["lfs", "smudge", "x"], {"stdin": os.urandom(1 << 20)}),
        ("lfs clean of a 100 KB line", ["lfs", "clean", "x"], {"stdin": b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"f" * 100_000}),
    ]
    for opt, values in [("--file-lifetime", ["1e400", "nan", "-1", "99999999999999999999"]), ("--keep", ["1e999d", "inf"]),
                        ("--max-upload", ["1e30GB", "-1", "GB", "nanMB"]), ("--port", ["99999", "-1"]), ("--rate-limit", ["0", "99999999999999999999"]),
                        ("--cancel-timeout", ["nan", "1e400s"]), ("--max-predictions", ["-5"]), ("--public-url", ["javascript:alert(1)", "http://x/?a=b"]),
                        ("--model", ["a/b=cog:/nonexistent/../..", "../../x=http://y", "a/b=tools/../../etc"]),
                        ("--token-file", [w + "/cli/open-token", w + "/cli/weak-token", w + "/cli/link-token", w + "/cli/fifo", "/dev/zero"]),
                        ("--faults", [w + "/cli/bomb.yaml", w + "/cli/fifo", sec]), ("--webhook-secret-file", [w + "/cli/fifo"])]:
        for v in values:
            cases.append((f"jobserver {opt} {v[-40:]}", J + [opt, v], {"serves": True}))
    cases.append(("jobserver --host 0.0.0.0 without --token-file", J + ["--host", "0.0.0.0"], {"serves": True}))
    for opt, v in [("--port", "70000"), ("--host", "0.0.0.0"), ("--host", "evil.example"), ("--token-file", w + "/cli/open-token"),
                   ("--token-file", w + "/cli/weak-token"), ("--token-file", w + "/cli/fifo"), ("--grace", "nan"), ("--grace", "1e308"),
                   ("--grace", "-1"), ("--log-level", "\x1b[2J")]:
        cases.append((f"serve {opt} {v[-40:]}", S + [opt, v], {"serves": True}))
    for n, (name, args, opts) in enumerate(cases):
        if quick and n % 3:
            continue
        opts = dict(opts)
        stdin, serves = opts.pop("stdin", None), opts.pop("serves", False)
        args = [a.encode() if isinstance(a, str) else a for a in args]
        # One that should refuse to start but serves is stopped after 15 s and counted.
        rc, out = rig.flowdir(*args, env=opts, timeout=15 if serves else 60, stdin=stdin, cwd=rr if args[0] == b"lfs" else None)
        crash = crash_of(rc, out)
        if serves and rc is None:
            crash = "it started serving instead of refusing the option"
        t.add(cat, name, crash=crash, secret=", ".join(rig.leaks(out)) or None,
              change="ran what the argument said" if os.path.exists(pwned) else None)
