"""hostile.py's inputs, by category: the job server, flowdir serve, the webhook receiver.

Each category is `run(rig, tally, quick)`; instance files and the command
line are in hostile_files.py. `probe` is the oracle every request goes
through.
"""
import base64, hashlib, hmac, json, os, socket, time

from hostile_net import Http, close_all, next_source, wait_for
import hostile_files

JSON = {"Content-Type": "application/json"}
VERBOSE = False  # --verbose: each input's answer


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def probe(rig, t, cat, name, send, server, snap=None, refused=False, allow=(), forbidden=()):
    """Sends one input and applies the oracles: `server` still up, no secret
    (nor any of `forbidden`) in what came back, and when `refused`: no 2xx,
    and `snap()` the same before and after."""
    before = snap() if snap else None
    status, headers, body = send()
    after = snap() if snap else None
    seen = body + b"".join(f"{k}: {v}\n".encode("latin-1", "replace") for k, v in headers if k.lower() != "set-cookie" or "set-cookie" not in allow)
    leaked = rig.leaks(seen, allow=allow) + [f"'{f}'" for f in forbidden if f.encode() in seen]
    secret = ", ".join(leaked) or None
    change = None
    if refused and isinstance(status, int) and 200 <= status < 300:
        change = f"answered {status} without the token or from the wrong origin"
    if before != after:
        change = (change + "; " if change else "") + "state changed: " + diff(before, after)
    t.add(cat, name, crash=rig.alive(server), secret=secret, change=change)
    if VERBOSE:
        print(f"  {cat}: {name[:110]}: {status} {body[:90]!r}", flush=True)
    return status, headers, body


def diff(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in set(a) | set(b) if a.get(k) != b.get(k)]
        return "; ".join(f"{k}: {diff(a.get(k), b.get(k))}" for k in sorted(keys, key=str)[:3])
    return f"{str(a)[:150]} → {str(b)[:150]}"


# Malformed HTTP, the same for each server: (name, bytes). {H} is the Host header's value.
def raw_inputs(path):
    p = path.encode()
    return [
        ("a bare method", b"GET\r\n\r\n"),
        ("NUL bytes", b"\x00" * 200),
        ("HTTP/9.9", b"GET " + p + b" HTTP/9.9\r\nHost: {H}\r\n\r\n"),
        ("a 100 KB request line", b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: {H}\r\n\r\n"),
        ("a 100 KB header", b"GET " + p + b" HTTP/1.1\r\nHost: {H}\r\nX-A: " + b"a" * 100_000 + b"\r\n\r\n"),
        ("300 header fields", b"GET " + p + b" HTTP/1.1\r\nHost: {H}\r\n" + b"".join(b"X-%d: a\r\n" % i for i in range(300)) + b"\r\n"),
        ("Content-Length -1", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n{}"),
        ("Content-Length 10^20", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nContent-Length: 99999999999999999999\r\n\r\n{}"),
        ("Content-Length abc", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}"),
        ("two Content-Lengths", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}"),
        ("chunked and Content-Length (smuggling)", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nContent-Length: 4\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET " + p + b" HTTP/1.1\r\nHost: {H}\r\n\r\n"),
        ("a chunk of 2^64-1 bytes", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n{}\r\n"),
        ("a chunk size that is not hex", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
        ("a header without a colon", b"GET " + p + b" HTTP/1.1\r\nHost: {H}\r\nno colon here\r\n\r\n"),
        ("a NUL in a header", b"GET " + p + b" HTTP/1.1\r\nHost: {H}\r\nX-A: a\x00b\r\n\r\n"),
        ("a folded header", b"GET " + p + b" HTTP/1.1\r\nHost: {H}\r\nX-A: a\r\n  Authorization: Bearer x\r\n\r\n"),
        ("no Host in HTTP/1.1", b"GET " + p + b" HTTP/1.1\r\n\r\n"),
        ("an absolute URI", b"GET http://evil.example" + p + b" HTTP/1.1\r\nHost: {H}\r\n\r\n"),
        ("CONNECT", b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"),
        ("bare LF line ends", b"GET " + p + b" HTTP/1.1\nHost: {H}\n\n"),
        ("invalid UTF-8 in the path", b"GET /\xff\xfe%ff%00 HTTP/1.1\r\nHost: {H}\r\n\r\n"),
        ("a 3 MB body without the token", b"POST " + p + b" HTTP/1.1\r\nHost: {H}\r\nContent-Type: application/json\r\nContent-Length: 3000000\r\n\r\n" + b"[" * 3_000_000),
    ]


def raw_category(rig, t, cat, http, server, path, snap, quick):
    host = f"127.0.0.1:{http.port}".encode()
    for i, (name, data) in enumerate(raw_inputs(path)):
        if quick and i % 3:
            continue
        probe(rig, t, cat, "raw: " + name, lambda: (0, [], http.raw(data.replace(b"{H}", host), source=next_source())), server, snap)
    # Slow clients: connections that never finish their head take no answer from anyone else.
    socks = http.hold(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\nX-Slow: ", 20 if quick else 100)
    probe(rig, t, cat, f"{len(socks)} connections that never finish their head", lambda: (0, [], b""), server, snap)
    close_all(socks)


# ---------------------------------------------------------------- the job server

def jobserver(rig, t, quick):
    cat, h = "jobserver", rig.jsh
    auth = {"Authorization": "Bearer " + rig.jstoken}
    s, _, body = h.request("POST", "/v1/files", dict(auth, **{"Content-Type": "text/plain"}), b"an upload")
    fid = json.loads(body)["id"]
    s, _, body = h.request("POST", "/v1/models/tools/Work/predictions", dict(auth, **JSON), {"input": {"text": "held", "sleep": 3600}})
    pid = json.loads(body)["id"]
    snap = rig.jobserver_state
    pred = {"version": "tools/Work", "input": {"text": "stolen", "sleep": 0}}
    routes = [("GET", "/v1/files/", None), ("GET", "/v1/files", None), ("GET", f"/v1/files/{fid}", None), ("GET", f"/v1/files/{fid}/x", None),
              ("DELETE", f"/v1/files/{fid}", None), ("GET", "/v1/predictions", None), ("GET", f"/v1/predictions/{pid}", None),
              ("POST", f"/v1/predictions/{pid}/cancel", None), ("POST", "/v1/predictions", pred),
              ("POST", "/v1/models/tools/Work/predictions", {"input": pred["input"]}), ("POST", "/v1/files", {"a": 1}),
              ("GET", "/v1/webhooks/default/secret", None), ("GET", "/v1/_stats", None), ("GET", "/v1/models/tools/Work", None),
              ("GET", "//v1/files", None), ("GET", "/v1//files", None), ("GET", "/V1/files", None), ("GET", "/v1/files%2F", None),
              ("GET", "/v1/./files", None), ("GET", "/v1/files/.", None), ("GET", "/v1/../v1/files", None), ("HEAD", "/v1/files", None),
              ("OPTIONS", "/v1/files", None), ("PUT", f"/v1/files/{fid}", {"a": 1}), ("PATCH", f"/v1/predictions/{pid}", {"status": "canceled"}),
              ("POST", f"/_cog/x/{pid}", {"status": "succeeded", "output": "forged"}), ("POST", f"/_cog/x/{pid}/z", {"status": "failed"}),
              ("GET", "/health-check/../v1/files", None), ("GET", "/health-check?/v1/files", None), ("POST", "/health-check", pred)]
    wrong = "Bearer " + "x" * len(rig.jstoken)
    creds = [("no token", {}), ("a wrong token", {"Authorization": wrong}), ("an empty Bearer", {"Authorization": "Bearer "}),
             ("the token with one more character", {"Authorization": "Bearer " + rig.jstoken + "x"}),
             ("the token in ?token=", "query"), ("the token as a cookie", {"Cookie": "token=" + rig.jstoken}),
             ("the token as Basic", {"Authorization": "Basic " + base64.b64encode(b":" + rig.jstoken.encode()).decode()})]
    for ci, (cname, cred) in enumerate(creds):
        if quick and ci > 1:
            break
        for method, path, body in routes:
            headers = dict(JSON) if body is not None else {}
            p = path
            if cred == "query":
                p += ("&" if "?" in p else "?") + "token=" + rig.jstoken
            else:
                headers.update(cred)
            probe(rig, t, cat, f"{method} {path} with {cname}", lambda: h.request(method, p, headers, body, source=next_source()),
                  "jobserver", snap, refused=not (method == "GET" and path.startswith("/health-check?")))
    # With the token, from a web page, or not as JSON: refused too.
    page = [("Origin: http://evil.example", {"Origin": "http://evil.example"}), ("Origin: null", {"Origin": "null"}),
            (f"Origin of its own address", {"Origin": f"http://127.0.0.1:{h.port}"}), ("Sec-Fetch-Site: cross-site", {"Sec-Fetch-Site": "cross-site"}),
            ("Sec-Fetch-Site: same-site", {"Sec-Fetch-Site": "same-site"}), ("Content-Type: text/plain", {"Content-Type": "text/plain"}),
            ("form-urlencoded", {"Content-Type": "application/x-www-form-urlencoded"}), ("no Content-Type", {"Content-Type": ""})]
    for i, (pname, extra) in enumerate(page):
        for method, path, body in [("POST", "/v1/predictions", pred), ("POST", f"/v1/predictions/{pid}/cancel", {}),
                                   ("DELETE", f"/v1/files/{fid}", None), ("GET", "/v1/files", None)][: 2 if quick else 4]:
            if method in ("DELETE", "GET") and "Content-Type" in extra:
                continue
            headers = {**auth, **(JSON if body is not None else {}), **extra}
            headers = {k: v for k, v in headers.items() if v}
            probe(rig, t, cat, f"{method} {path} with the token and {pname}", lambda: h.request(method, path, headers, body),
                  "jobserver", snap, refused=True)
    # Too many wrong tokens from one address: it is held off, others are not.
    for i in range(12):
        h.request("GET", "/v1/files", {"Authorization": f"Bearer wrong-{i}-" + "y" * 30}, source="127.0.0.77")
    probe(rig, t, cat, "the right token after 12 wrong ones from one address",
          lambda: h.request("POST", "/v1/predictions", dict(auth, **JSON), pred, source="127.0.0.77"), "jobserver", snap, refused=True)
    raw_category(rig, t, cat, h, "jobserver", "/v1/predictions", snap, quick)
    # With the token: hostile bodies, paths and names. Nothing may crash it, read the token, or write outside its folder.
    marker = rig.work + "/outside/pwned-by-input"
    hostile = [
        ("POST", "/v1/predictions", b"[" * 100_000, JSON, "JSON nested 100,000 deep"),
        ("POST", "/v1/predictions", b'{"version": "tools/Work", "input": {"sleep": 1e999}}', JSON, "a number of 1e999"),
        ("POST", "/v1/predictions", b'{"version": "tools/Work", "input": {"sleep": NaN}}', JSON, "NaN"),
        ("POST", "/v1/predictions", b'{"version": "tools/Work", "input": {"text": "\xff\xfe"}}', JSON, "invalid UTF-8"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {"sleep": -1}}, JSON, "sleep -1"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {"text": f"$(touch {marker}); `touch {marker}`", "sleep": 0}}, JSON, "shell in an input"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {"text": "--help", "sleep": "-5"}}, JSON, "options as inputs"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {}, "webhook": "http://169.254.169.254/latest/meta-data"}, JSON, "a webhook to a metadata address"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {}, "webhook": "file:///etc/passwd"}, JSON, "a file: webhook"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {}, "webhook": "http://[::1"}, JSON, "a broken webhook URL"),
        ("POST", "/v1/predictions", {"version": "tools/Work", "input": {}, "webhook_events_filter": ["x" * 10000] * 50}, JSON, "a huge events filter"),
        ("POST", "/v1/predictions", {"version": "x" * 100_000, "input": {}}, JSON, "a 100 KB version"),
        ("POST", "/v1/predictions", {"version": 1e308, "input": []}, JSON, "a number as the version"),
        ("POST", "/v1/predictions", b"{" + b'"a":1,' * 2_000_000 + b"}", JSON, "a 12 MB object"),
        ("POST", "/v1/predictions", b"[" * 17_000_000, JSON, "a 17 MB body"),
        ("POST", "/v1/models/..%2F..%2Fetc/passwd/predictions", {"input": {}}, JSON, "a model name with ../"),
        ("POST", "/v1/models/tools/..%2F..%2Fjs%2Ftoken/predictions", {"input": {}}, JSON, "a model name pointing at the token file"),
        ("GET", "/v1/predictions?cursor=99999999999999999999999", None, {}, "a huge cursor"),
        ("GET", "/v1/predictions?cursor=-1%00", None, {}, "a cursor with NUL"),
        ("GET", "/v1/predictions?cursor=" + "A" * 50000, None, {}, "a 50 KB cursor"),
        ("GET", "/v1/files/../token", None, {}, "files/../token"),
        ("GET", "/v1/files/%2e%2e/token", None, {}, "files/%2e%2e/token"),
        ("GET", "/v1/files/..%2F..%2Fjs%2Ftoken", None, {}, "files/..%2F..%2Ftoken"),
        ("GET", f"/v1/files/{fid}/..%2F..%2F..%2Ftoken", None, {}, "a file name ..%2F..%2Ftoken"),
        ("GET", "/v1/predictions/..%2F..%2Ftoken", None, {}, "predictions/..%2Ftoken"),
        ("GET", "/v1/files/" + "%2e" * 5000, None, {}, "a file id of 5000 dots"),
    ]
    bnd = "b0undary"
    def multipart(fname, ctype, data, boundary=bnd, close=True):
        return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"content\"; filename=\"{fname}\"\r\nContent-Type: {ctype}\r\n\r\n").encode() \
            + data + (f"\r\n--{boundary}--\r\n".encode() if close else b"")
    mp = {"Content-Type": f"multipart/form-data; boundary={bnd}"}
    hostile += [
        ("POST", "/v1/files", multipart("../../../outside/evil", "text/plain", b"x"), mp, "an upload named ../../../outside/evil"),
        ("POST", "/v1/files", multipart("a\r\nX-Evil: 1\r\n", "text/plain", b"x"), mp, "an upload name with CRLF"),
        ("POST", "/v1/files", multipart("page.html", "text/html", b"<script>alert(1)</script>"), mp, "an HTML upload"),
        ("POST", "/v1/files", multipart("x", "text/plain", b"x", close=False), mp, "a multipart body never closed"),
        ("POST", "/v1/files", multipart("x", "text/plain", b"x", boundary="q" * 5000), {"Content-Type": "multipart/form-data; boundary=" + "q" * 5000}, "a 5000-character boundary"),
        ("POST", "/v1/files", b"".join(multipart(f"p{i}", "text/plain", b"x", close=False) for i in range(3000)) + f"--{bnd}--\r\n".encode(), mp, "3000 parts"),
        ("POST", "/v1/files", multipart("x", "text/plain", b"x"), {"Content-Type": "multipart/form-data"}, "multipart without a boundary"),
        ("POST", "/v1/files", os.urandom(200_000), {"Content-Type": "image/png"}, "200 KB of noise as a PNG"),
    ]
    for i, (method, path, body, headers, name) in enumerate(hostile):
        if quick and i % 3:
            continue
        probe(rig, t, cat, "with the token: " + name, lambda: h.request(method, path, dict(auth, **headers), body), "jobserver",
              snap=lambda: sorted(os.listdir(rig.work + "/outside")), forbidden=("root:x:0",))
    # The control: a request with the token does change the state (else the oracle is blind).
    before = snap()
    h.request("POST", f"/v1/predictions/{pid}/cancel", auth)
    t.add(cat, "control: a cancel with the token is seen", change=None if wait_for(lambda: snap() != before, 10) else "oracle blind: no change seen")


# ---------------------------------------------------------------- flowdir serve

def serve(rig, t, quick):
    cat, h = "serve", rig.sh
    r, d, l = rig.ids["rr"], rig.ids["done"], rig.ids["links"]
    w = rig.work
    folders = [w + "/root/" + n for n in ("rr", "done", "links")]
    snap = lambda: rig.snapshot(folders)
    changes = [("POST", f"/api/instances/{r}/nodes/look/answer", {"choice": "cool"}),
               ("POST", f"/api/instances/{r}/nodes/pick/answer", {"files": [{"port": "image", "name": "x.png", "base64": "iVBORw0KGgo="}]}),
               ("POST", f"/api/instances/{r}/nodes/settings/answer", {"approve": True, "params": {"width": 1}}),
               ("POST", f"/api/instances/{r}/nodes/settings/answer", {"decline": True}),
               ("POST", f"/api/instances/{r}/nodes/look/claim", {}), ("DELETE", f"/api/instances/{r}/nodes/look/claim", {}),
               ("POST", f"/api/instances/{r}/nodes/look/snooze", {"seconds": 3600}), ("POST", f"/api/instances/{r}/nodes/look/skip", {}),
               ("POST", f"/api/instances/{d}/nodes/a/cancel", {}), ("POST", f"/api/instances/{d}/nodes/a/retry", {}),
               ("POST", f"/api/instances/{d}/nodes/b/rerun", {}), ("PUT", f"/api/instances/{d}/nodes/a/params", {"params": {"text": "stolen"}}),
               ("POST", f"/api/instances/{d}/polling", {"paused": True}), ("POST", f"/api/instances/{r}/run", {}),
               ("POST", f"/api/instances/{d}/duplicate", {"name": "stolen"}), ("POST", f"/api/instances/{d}/archive", {"archived": True}),
               ("DELETE", f"/api/instances/{d}", {}), ("POST", "/api/new", {"template": w + "/wf/pair.yaml"}),
               ("POST", "/api/new", {"template": "rr"})]
    own, other = f"http://127.0.0.1:{h.port}", f"http://127.0.0.1:{h.port + 1}"
    cookie = {"Cookie": "flowdir_token=" + rig.stoken}
    bearer = {"Authorization": "Bearer " + rig.stoken}
    variants = [
        ("no token", JSON, ""), ("a wrong Bearer", dict(JSON, Authorization="Bearer " + "z" * len(rig.stoken)), ""),
        ("the cookie alone, no Origin (a script)", dict(JSON, **cookie), ""), ("the token in ?token=", JSON, "?token=" + rig.stoken),
        ("the cookie from a page on another 127.0.0.1 port", dict(JSON, Origin=other, **{"Sec-Fetch-Site": "same-site"}, **cookie), ""),
        ("the cookie, text/plain from another port's page", dict(cookie, **{"Content-Type": "text/plain", "Origin": other, "Sec-Fetch-Site": "same-site"}), ""),
        ("the Bearer as text/plain", dict(bearer, **{"Content-Type": "text/plain"}), ""),
        ("the Bearer as a form", dict(bearer, **{"Content-Type": "application/x-www-form-urlencoded"}), ""),
        ("the cookie with Origin: null", dict(JSON, Origin="null", **cookie), ""),
        ("the cookie, Sec-Fetch-Site: cross-site", dict(JSON, **{"Sec-Fetch-Site": "cross-site"}, **cookie), ""),
        ("the Bearer for Host evil.example (rebinding)", dict(JSON, Host=f"evil.example:{h.port}", **bearer), ""),
        ("the cookie, Origin localhost.evil.example", dict(JSON, Origin=f"http://localhost.evil.example:{h.port}", **cookie), ""),
        ("the cookie, Origin with its port + .evil", dict(JSON, Origin=own + ".evil.example", **cookie), ""),
        ("the Bearer, Origin https:// of its address", dict(JSON, Origin=f"https://127.0.0.1:{h.port}", **bearer), ""),
    ]
    for vi, (vname, headers, query) in enumerate(variants):
        if quick and vi not in (0, 4, 6, 10):
            continue
        for method, path, body in changes:
            probe(rig, t, cat, f"{method} {path.replace(r, 'RR').replace(d, 'DONE')} with {vname}",
                  lambda: h.request(method, path + query, headers, body, source=next_source()), "serve", snap, refused=True)
    reads = ["/api/instances", f"/api/instances/{r}", "/api/inbox", "/api/templates", "/api/events", f"/api/instances/{d}/nodes/a/log",
             f"/api/instances/{d}/nodes/a/history", f"/api/instances/{d}/files/nodes/a/out/out.txt", f"/api/instances/{d}/thumbs/nodes/a/out/out.txt",
             "/app.js", "/"]
    read_variants = [("no token", {}, ""), ("a wrong ?token=", {}, "?token=wrong" + "w" * 40),
                     ("the cookie from another site's page", dict(cookie, **{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"}), ""),
                     ("a wrong cookie", {"Cookie": "flowdir_token=" + "q" * 48}, ""),
                     ("the Bearer for Host evil.example", dict(bearer, Host=f"evil.example:{h.port}"), ""),
                     ("an iframe of another port's page", dict(cookie, **{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"}), "")]
    for vi, (vname, headers, query) in enumerate(read_variants):
        if quick and vi not in (0, 2):
            continue
        for path in reads:
            probe(rig, t, cat, f"GET {path.replace(r, 'RR').replace(d, 'DONE')} with {vname}",
                  lambda: h.request("GET", path + query, headers, source=next_source(), timeout=5), "serve", refused=True)
    for i in range(12):
        h.request("GET", "/api/instances", {"Authorization": f"Bearer wrong-{i}-" + "y" * 40}, source="127.0.0.66")
    probe(rig, t, cat, "the right Bearer after 12 wrong ones from one address",
          lambda: h.request("POST", f"/api/instances/{r}/nodes/look/snooze", dict(JSON, **bearer), {"seconds": 60}, source="127.0.0.66"),
          "serve", snap, refused=True)
    raw_category(rig, t, cat, h, "serve", f"/api/instances/{d}/archive", snap, quick)
    serve_with_token(rig, t, quick, snap)


def serve_with_token(rig, t, quick, snap):
    """With the token, as a script: nothing read past the instance, nothing written outside the root, no crash."""
    cat, h = "serve", rig.sh
    r, d, l = rig.ids["rr"], rig.ids["done"], rig.ids["links"]
    w = rig.work
    bearer = dict(JSON, Authorization="Bearer " + rig.stoken)
    f = lambda i, p: f"/api/instances/{i}/files/{p}"
    cfg = rig.cfg.lstrip("/")
    nested = b"[" * 100_000
    inputs = [
        ("GET", f(l, "..%2F..%2F..%2F" + "%2F".join(["home", ".config", "flowdir", "secrets.yaml"])), None, "files/..%2F… to secrets.yaml"),
        ("GET", f(l, "%2e%2e/%2e%2e/%2e%2e/home/.config/flowdir/secrets.yaml"), None, "files/%2e%2e/… to secrets.yaml"),
        ("GET", f(l, "../../../home/.config/flowdir/secrets.yaml"), None, "files/../… to secrets.yaml"),
        ("GET", f(l, "%2F" + cfg.replace("/", "%2F") + "%2Fsecrets.yaml"), None, "files/ an absolute path"),
        ("GET", f(l, "nodes/a/out/leak.txt"), None, "a committed link to secrets.yaml"),
        ("GET", f"/api/instances/{l}/thumbs/nodes/a/out/leak.txt", None, "the thumbnail of a link to secrets.yaml"),
        ("GET", f(l, "nodes/a/out/gitconfig.txt"), None, "a link into .git/"),
        ("GET", f(l, "nodes%2Fa%2Fout%2Fleak.txt"), None, "a link, slashes encoded"),
        ("GET", f(l, "nodes/a/out/leak.txt%00.png"), None, "a link with %00.png"),
        ("GET", f(l, ".git/config"), None, ".git/config"), ("GET", f(l, ".git/../.git/config"), None, ".git/../.git/config"),
        ("GET", f(l, ".flowdir/journal"), None, ".flowdir/"), ("GET", f(l, "nodes/../.git/config"), None, "nodes/../.git/config"),
        ("GET", f"/api/instances/..%2F..%2Fhome/files/.config/flowdir/secrets.yaml", None, "an instance id with ../"),
        ("GET", f"/api/instances/{d}/nodes/..%2F..%2F..%2Fhome%2F.config%2Fflowdir/log", None, "a node id with ../ (log)"),
        ("GET", f"/api/instances/{d}/nodes/a/log?run=-1", None, "log of run -1"),
        ("GET", f"/api/instances/{d}/nodes/a/log?run=99999999999999999999", None, "log of run 10^20"),
        ("GET", f"/api/instances/{d}/nodes/a/log?run=..%2F..%2F..", None, "log of run ../.."),
        ("GET", f"/api/instances/{d}/nodes/..%2Fa/history", None, "history of node ../a"),
        ("GET", "/api/instances?filter=%3Cscript%3E&sort=..%2F..", None, "a bad filter and sort"),
        ("GET", "/api/instances?search=" + "%F0%9F%92%A9" * 5000, None, "a 20 KB search"),
        ("GET", "/open?link=javascript:alert(1)", None, "/open?link=javascript:"),
        ("GET", "/open?link=flowdir://x%0d%0aSet-Cookie:%20a=b/node/y", None, "/open with CRLF in the link"),
        ("GET", "/open?link=flowdir://" + "x" * 60000, None, "/open with a 60 KB link"),
        ("POST", "/api/new", {"template": rig.cfg + "/secrets.yaml"}, "/api/new of secrets.yaml"),
        ("POST", "/api/new", {"template": "/etc/passwd"}, "/api/new of /etc/passwd"),
        ("POST", "/api/new", {"template": "../../home/.config/flowdir/secrets.yaml"}, "/api/new of ../…/secrets.yaml"),
        ("POST", "/api/new", {"template": w + "/root/links/nodes/a/out/leak.txt"}, "/api/new of a link to secrets.yaml"),
        ("POST", "/api/new", {"template": "rr", "name": "../outside/escaped"}, "/api/new named ../outside/escaped"),
        ("POST", f"/api/instances/{r}/nodes/look/snooze", {"seconds": 1e19}, "snooze 1e19 s"),
        ("POST", f"/api/instances/{r}/nodes/look/snooze", b'{"seconds": 1e999}', "snooze 1e999 s"),
        ("POST", f"/api/instances/{r}/nodes/look/snooze", {"seconds": -1}, "snooze -1 s"),
        ("POST", f"/api/instances/{r}/nodes/look/snooze", {"seconds": "3600"}, "snooze \"3600\""),
        ("POST", f"/api/instances/{r}/nodes/look/snooze", {"seconds": 9.3e18}, "snooze 9.3e18 s"),
        ("POST", f"/api/instances/{r}/nodes/look/answer", {"choice": "warm\nevil: 1"}, "a choice with a newline"),
        ("POST", f"/api/instances/{r}/nodes/look/answer", {"choice": "\x1b]0;pwned\x07\x1b[2J"}, "a choice with escape codes"),
        ("POST", f"/api/instances/{r}/nodes/look/answer", {"choice": "w" * 500_000}, "a 500 KB choice"),
        ("POST", f"/api/instances/{r}/nodes/pick/answer", {"files": [{"port": "../../../outside/x", "name": "../../../outside/evil.png", "base64": "iVBORw0KGgo="}]}, "an answer file named ../../outside"),
        ("POST", f"/api/instances/{r}/nodes/pick/answer", {"files": [{"port": "image", "name": "x.png", "base64": "%%%%"}]}, "an answer that is not base64"),
        ("POST", f"/api/instances/{r}/nodes/pick/answer", {"files": [{"port": "image", "name": "x.svg", "base64": base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>").decode()}]}, "an SVG answer"),
        ("POST", f"/api/instances/{r}/nodes/settings/answer", {"approve": True, "params": {"width": 1e308, "quality": -1e308}}, "approve with params 1e308"),
        ("POST", f"/api/instances/{r}/nodes/settings/answer", b'{"approve": true, "params": ' + nested + b"}", "approve with params nested 100,000 deep"),
        ("PUT", f"/api/instances/{d}/nodes/a/params", {"params": {"text": "\u0000\u001b[2J", "width": 1e300}}, "params with NUL and escapes"),
        ("PUT", f"/api/instances/{d}/nodes/..%2F..%2Foutside/params", {"params": {"text": "x"}}, "params of node ../../outside"),
        ("POST", f"/api/instances/{d}/duplicate", {"name": "../outside/dup"}, "duplicate named ../outside/dup"),
        ("POST", f"/api/instances/{d}/duplicate", {"name": "/tmp/flowdir-hostile-abs"}, "duplicate named an absolute path"),
        ("POST", f"/api/instances/{d}/duplicate", {"name": "a\nb\x1b[31m" + "n" * 5000}, "duplicate with a 5 KB name and escapes"),
        ("POST", f"/api/instances/{d}/archive", {"archived": "yes"}, "archive \"yes\""),
        ("POST", f"/api/instances/{d}/polling", {"paused": None}, "polling null"),
        ("POST", f"/api/instances/{d}/polling", b"\xff\xfe{}", "a body of invalid UTF-8"),
        ("POST", f"/api/instances/{d}/polling", b"{" * 1_100_000, "a body over 1 MB"),
        ("POST", f"/api/instances/{r}/nodes/look/%00", {}, "a verb of NUL"),
        ("POST", f"/api/instances/{r}/nodes/%E2%80%AE/skip", {}, "a node of U+202E"),
    ]
    escaped = lambda: sorted(os.listdir(w + "/outside")) + [os.path.exists("/tmp/flowdir-hostile-abs")]
    for i, (method, path, body, name) in enumerate(inputs):
        if quick and i % 3:
            continue
        probe(rig, t, cat, "with the token: " + name, lambda: h.request(method, path, bearer, body, timeout=30), "serve", escaped,
              forbidden=("root:x:0", "[core]", "repositoryformatversion"))
    socks = []
    for _ in range(20 if quick else 100):
        try:
            s = socket.create_connection(("127.0.0.1", h.port), timeout=5)
            s.sendall(f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{h.port}\r\nAuthorization: Bearer {rig.stoken}\r\n\r\n".encode())
            socks.append(s)
        except OSError:
            break
    probe(rig, t, cat, f"{len(socks)} event streams held open", lambda: (0, [], b""), "serve")
    close_all(socks)
    before = snap()
    h.request("POST", f"/api/instances/{r}/nodes/look/snooze", bearer, {"seconds": 600})
    t.add(cat, "control: a snooze with the token is seen", change=None if wait_for(lambda: snap() != before, 10) else "oracle blind: no change seen")


# ---------------------------------------------------------------- the webhook receiver

def webhook(rig, t, quick):
    cat, h = "webhook", rig.hh
    inst = rig.work + "/hookroot/hooked"
    snap = lambda: rig.snapshot([inst])
    now = int(time.time())
    body = json.dumps({"id": rig.job, "status": "succeeded", "output": "forged", "logs": "", "error": None}).encode()

    def sign(secret, msg_id, ts, data):
        key = base64.b64decode(secret[6:]) if secret.startswith("whsec_") else secret.encode()
        return "v1," + base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + data, hashlib.sha256).digest()).decode()

    other = "whsec_" + base64.b64encode(b"not-the-secret-at-all-000").decode()
    good_ts = str(now)
    cases = [("no headers", {}, body, "/hooks/gpu")]
    for ts in ["nan", "inf", "-inf", "1e20", "99999999999999999999", "-1", "0", "", " 1", "1.5", "0x10", str(now - 1000), str(now + 1000),
               "9999999999999", "١٢٣٤", str(now) + "\x00", "+" + str(now)]:
        cases.append((f"timestamp {ts!r}", {"webhook-id": "msg_1", "webhook-timestamp": ts, "webhook-signature": "v1,AAAA"}, body, "/hooks/gpu"))
    for sname, sig in [("v1,AAAA", "v1,AAAA"), ("v1, (empty)", "v1,"), ("v2 of nothing", "v2,abc"), ("10,000 signatures", " ".join(["v1,AAAA"] * 10000)),
                       ("a 5000-character signature", "v1," + "A" * 5000), ("signed with another secret", sign(other, "msg_2", good_ts, body)),
                       ("signed with an empty secret", sign("", "msg_2", good_ts, body)),
                       ("signed with the secret's text, not its bytes", "v1," + base64.b64encode(hmac.new(rig.whsec.encode(), f"msg_2.{good_ts}.".encode() + body, hashlib.sha256).digest()).decode()),
                       ("the signature of another body", sign(other, "msg_2", good_ts, b"{}"))]:
        cases.append((f"signature {sname}", {"webhook-id": "msg_2", "webhook-timestamp": good_ts, "webhook-signature": sig}, body, "/hooks/gpu"))
    sig = "v1,AAAA"
    for iname, i in [("empty", ""), ("with control characters", "a\x01b"), ("300 characters", "i" * 300)]:
        cases.append((f"webhook-id {iname}", {"webhook-id": i, "webhook-timestamp": good_ts, "webhook-signature": sig}, body, "/hooks/gpu"))
    headers = {"webhook-id": "msg_3", "webhook-timestamp": good_ts, "webhook-signature": sig}
    for p in ["/hooks/gpu/", "/hooks//gpu", "/hooks/gpu?x=1", "/HOOKS/gpu", "/hooks/canary", "/x/hooks/gpu", "/hooks/gpu/../gpu", "/hooks/%67pu", "/hooks/gpu%00"]:
        cases.append((f"path {p}", headers, body, p))
    cases += [("a 3 MB body", headers, b" " * 3_000_000, "/hooks/gpu"), ("a body that is not JSON", headers, b"\xff\x00garbage", "/hooks/gpu"),
              ("JSON nested 100,000 deep", headers, b"[" * 100_000, "/hooks/gpu"), ("an empty body", headers, b"", "/hooks/gpu")]
    for i, (name, hdrs, data, path) in enumerate(cases):
        if quick and i % 2:
            continue
        probe(rig, t, cat, name, lambda: h.request("POST", path, dict(hdrs, **JSON), data, source=next_source()), "watch", snap, refused=True)
    for method in ["GET", "PUT", "DELETE"]:
        probe(rig, t, cat, f"{method} /hooks/gpu", lambda: h.request(method, "/hooks/gpu", dict(headers, **JSON), body), "watch", snap, refused=True)
    raw_category(rig, t, cat, h, "watch", "/hooks/gpu", snap, quick)
    # The control: a delivery signed with the secret is believed (the node's state moves).
    before = snap()
    done = json.dumps({"id": rig.job, "status": "failed", "error": "the control delivery", "logs": ""}).encode()
    ts = str(int(time.time()))
    h.request("POST", "/hooks/gpu", dict(JSON, **{"webhook-id": "control", "webhook-timestamp": ts, "webhook-signature": sign(rig.whsec, "control", ts, done)}), done)
    t.add(cat, "control: a signed delivery is seen", change=None if wait_for(lambda: snap() != before, 20) else "oracle blind: no change seen")


CATEGORIES = [("jobserver", jobserver), ("serve", serve), ("webhook", webhook),
              ("files", hostile_files.files), ("cli", hostile_files.cli)]
