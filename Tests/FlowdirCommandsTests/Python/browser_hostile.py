#!/usr/bin/env python3
"""flowdir serve against a hostile page in the person's own browser (docs/security.md).

The victim browser opens the pages (so it holds the token's cookie); then a
page served from ANOTHER 127.0.0.1 port — which the browser counts as the
same site, so it sends that cookie — tries every route that changes
something, with fetch (text/plain and JSON, with credentials), form posts,
beacons, and <img>, <script>, <iframe> and navigation GETs. Afterwards
every instance must be as it was (git log, git status, its files), the
server must have refused each request that reached it, and nothing the page
could observe may have succeeded. Last, an SVG with a script, an output of
an instance, is opened from the pages: no script may run on their origin.

usage: browser_hostile.py --url URL --root ROOT --serve-log FILE --artifacts DIR
  ROOT holds rr/ (three questions), slow/ (a step running), done/ (finished)
  and pic/ (an SVG output with a script in it).
"""
import argparse, functools, hashlib, http.server, json, os, subprocess, sys, tempfile, threading, time, traceback, urllib.parse

from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import browser, check, failures, instance_id, node_state, wait

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--root", required=True)
ap.add_argument("--serve-log", required=True)
ap.add_argument("--artifacts", required=True)
a = ap.parse_args()
os.makedirs(a.artifacts, exist_ok=True)
parsed = urllib.parse.urlparse(a.url)
BASE = f"{parsed.scheme}://{parsed.netloc}"
TOKEN = urllib.parse.parse_qs(parsed.query)["token"][0]
NAMES = ["rr", "slow", "done", "pic"]
report = []


def say(line):
    """Printed, and kept in ARTIFACTS/hostile-report.txt: what was tried and what came of it."""
    report.append(line)
    print(line, flush=True)

ids = {n: instance_id(a.root, n) for n in NAMES}


def snapshot():
    """Each instance as git and the disk have it (not .git/ itself, nor .flowdir/'s locks)."""
    out = {}
    for name in NAMES:
        folder = os.path.join(a.root, name)
        if not os.path.isdir(folder):
            out[name] = "gone"
            continue
        git = lambda *args: subprocess.run(["git", "-C", folder] + list(args), capture_output=True, text=True).stdout
        files = {}
        for base, dirs, names in os.walk(folder):
            rel = os.path.relpath(base, folder)
            if rel.split(os.sep)[0] in (".git", ".flowdir"):
                continue
            for f in names:
                path = os.path.join(base, f)
                with open(path, "rb") as fh:
                    files[os.path.relpath(path, folder)] = hashlib.sha1(fh.read()).hexdigest()
        thumbs = os.path.join(folder, ".flowdir", "thumbs")
        out[name] = {"log": git("log", "--format=%H %an %s"), "status": git("status", "--porcelain"), "files": files,
                     "thumbs": sorted(os.listdir(thumbs)) if os.path.isdir(thumbs) else []}
    return out


def served_log():
    try:
        return open(a.serve_log, encoding="utf-8", errors="replace").read().splitlines()
    except FileNotFoundError:
        return []


def refused_lines():
    return [l for l in served_log() if " refused" in l or "wrong token" in l]


def quiet(what, seconds=2.0, timeout=60):
    """Until the server's log has not grown for `seconds` (every request the page sent has been answered)."""
    end = time.time() + timeout
    last, since = len(served_log()), time.time()
    while time.time() < end:
        time.sleep(0.1)
        n = len(served_log())
        if n != last:
            last, since = n, time.time()
        elif time.time() - since >= seconds:
            return
    raise AssertionError(f"the server's log kept growing for {timeout}s after {what}")


# Every route that changes something (Sources/FlowdirPages/UI/Routes/), with a body it takes.
rid, lid, did, pid = ids["rr"], ids["slow"], ids["done"], ids["pic"]
CHANGES = [
    ["POST", f"/api/instances/{rid}/nodes/look/answer", {"choice": "cool"}],
    ["POST", f"/api/instances/{rid}/nodes/pick/answer", {"files": [{"port": "image", "name": "x.png", "base64": "iVBORw0KGgo="}]}],
    ["POST", f"/api/instances/{rid}/nodes/settings/answer", {"approve": True, "params": {"width": 1}}],
    ["POST", f"/api/instances/{rid}/nodes/settings/answer", {"decline": True}],
    ["POST", f"/api/instances/{rid}/nodes/look/claim", {}],
    ["DELETE", f"/api/instances/{rid}/nodes/look/claim", {}],
    ["POST", f"/api/instances/{rid}/nodes/look/snooze", {"seconds": 3600}],
    ["POST", f"/api/instances/{rid}/nodes/look/skip", {}],
    ["POST", f"/api/instances/{lid}/nodes/nap/cancel", {}],
    ["POST", f"/api/instances/{did}/nodes/note/retry", {}],
    ["POST", f"/api/instances/{did}/nodes/note/rerun", {}],
    ["PUT", f"/api/instances/{rid}/nodes/render/params", {"params": {"sharpen": 2}}],
    ["POST", f"/api/instances/{lid}/polling", {"paused": True}],
    ["POST", f"/api/instances/{rid}/run", {}],
    ["POST", f"/api/instances/{did}/duplicate", {"name": "stolen"}],
    ["POST", f"/api/instances/{did}/archive", {"archived": True}],
    ["DELETE", f"/api/instances/{did}", {}],
    ["POST", "/api/new", {"template": "/etc/passwd"}],
    ["POST", "/api/new", {"template": os.path.join(a.root, "..", "wf", "slow.yaml")}],
]
READS = ["/", "/app.js", "/api/instances", f"/api/instances/{rid}", "/api/inbox", "/api/templates", "/api/events",
         f"/api/instances/{did}/nodes/note/log", f"/api/instances/{did}/nodes/note/history",
         f"/api/instances/{pid}/files/nodes/draw/out/picture.svg", f"/api/instances/{pid}/thumbs/nodes/draw/out/picture.svg"]

ATTACK_HTML = r"""<!doctype html><meta charset="utf-8"><title>cute cats</title><body><h1>cute cats</h1>
<script>
(async function () {
  const C = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  const T = C.target, results = window.__results = [];
  const note = (what, outcome) => results.push([what, outcome]);
  const settle = (p, ms) => Promise.race([p, new Promise((r) => setTimeout(() => r('no answer in ' + ms + ' ms'), ms))]);
  for (const [method, path, body] of C.changes) {
    const url = T + path, text = JSON.stringify(body);
    // 1. a "simple" request: no preflight, the cookie sent; the answer unreadable.
    try { await fetch(url, { method: method === 'POST' ? 'POST' : method, mode: 'no-cors', credentials: 'include',
                             headers: { 'Content-Type': 'text/plain' }, body: text }); note(method + ' ' + path + ' no-cors text/plain', 'sent (opaque)'); }
    catch (e) { note(method + ' ' + path + ' no-cors text/plain', 'blocked: ' + e.message); }
    // 2. JSON with credentials: a preflight first.
    try { const r = await fetch(url, { method, credentials: 'include', headers: { 'Content-Type': 'application/json' }, body: text });
          note(method + ' ' + path + ' cors JSON', 'READ ' + r.status); }
    catch (e) { note(method + ' ' + path + ' cors JSON', 'blocked: ' + e.message); }
    // 3. text/plain, cors mode: sent, its answer not readable without CORS headers.
    try { const r = await fetch(url, { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body: text });
          note('POST ' + path + ' cors text/plain', 'READ ' + r.status); }
    catch (e) { note('POST ' + path + ' cors text/plain', 'blocked: ' + e.message); }
    // 4. a beacon (POST, no-cors, with the cookie).
    note('beacon ' + path, navigator.sendBeacon(url, new Blob([text], { type: 'text/plain' })) ? 'queued' : 'not queued');
    // 5. form posts into a hidden frame: text/plain (a JSON-looking body) and urlencoded.
    for (const enctype of ['text/plain', 'application/x-www-form-urlencoded']) {
      const frame = document.createElement('iframe'), name = 'f' + Math.random().toString(36).slice(2);
      frame.name = name; frame.style.display = 'none'; document.body.appendChild(frame);
      const form = document.createElement('form');
      form.method = 'POST'; form.action = url; form.enctype = enctype; form.target = name;
      const input = document.createElement('input'); input.name = text.slice(0, -1) + ',"x":"'; input.value = '"}';
      form.appendChild(input); document.body.appendChild(form);
      const loaded = new Promise((r) => frame.addEventListener('load', () => r('answered (unreadable)'), { once: true }));
      form.submit();
      note('form ' + enctype + ' ' + path, await settle(loaded, 5000));
      let readable = 'unreadable';
      try { const doc = frame.contentDocument; if (doc && doc.body) readable = 'READ ' + doc.body.innerText.slice(0, 60); } catch (e) { /* cross-origin */ }
      note('form ' + enctype + ' ' + path + ' answer', readable);
    }
  }
  for (const path of C.reads) {
    const img = new Image();
    note('<img> ' + path, await settle(new Promise((r) => { img.onload = () => r('LOADED ' + img.naturalWidth); img.onerror = () => r('error'); img.src = T + path; }), 8000));
    const s = document.createElement('script');
    note('<script> ' + path, await settle(new Promise((r) => { s.onload = () => r('RAN'); s.onerror = () => r('error'); s.src = T + path; document.head.appendChild(s); }), 8000));
    try { const r = await fetch(T + path, { credentials: 'include' }); note('read ' + path, 'READ ' + r.status); }
    catch (e) { note('read ' + path, 'blocked: ' + e.message); }
    const frame = document.createElement('iframe'); frame.style.display = 'none'; document.body.appendChild(frame);
    note('<iframe> ' + path, await settle(new Promise((r) => { frame.onload = () => r('answered (unreadable)'); frame.src = T + path; }), 5000));
  }
  try { const es = new EventSource(T + '/api/events', { withCredentials: true });
        note('EventSource', await settle(new Promise((r) => { es.onopen = () => r('OPEN'); es.onerror = () => r('error'); }), 5000)); es.close(); }
  catch (e) { note('EventSource', 'blocked: ' + e.message); }
  document.body.dataset.done = '1';
})();
</script>
"""

SUCCESS_WORDS = ("READ", "LOADED", "RAN", "OPEN")


def attack(d):
    before = snapshot()
    site = tempfile.mkdtemp(prefix="flowdir-attacker-")
    open(os.path.join(site, "attack.html"), "w").write(ATTACK_HTML)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=site)
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    attacker = f"http://127.0.0.1:{server.server_address[1]}"
    check(attacker.rsplit(":", 1)[1] != BASE.rsplit(":", 1)[1], "the attacker's page is on the server's own port")
    refused_before = len(refused_lines())
    try:
        config = urllib.parse.quote(json.dumps({"target": BASE, "changes": CHANGES, "reads": READS}))
        d.get(f"{attacker}/attack.html#{config}")
        wait(lambda: d.execute_script("return document.body.dataset.done") == "1", 300, "the attacker's page to try everything")
        results = d.execute_script("return window.__results")
        for what, outcome in results:
            say(f"  {what}: {outcome}")
            check(not any(str(outcome).startswith(w) for w in SUCCESS_WORDS), f"the attacker's page got through: {what}: {outcome}")
        say(f"the attacker's page tried {len(results)} things")
        # Navigations from the attacker's page (top level, with the cookie): only the pages themselves open.
        idle = f"{attacker}/attack.html#" + urllib.parse.quote(json.dumps({"target": BASE, "changes": [], "reads": []}))
        for path in [f"/api/instances/{rid}", f"/api/instances/{pid}/files/nodes/draw/out/picture.svg", "/api/templates"]:
            d.get(idle)
            d.execute_script("location.href = arguments[0]", BASE + path)
            wait(lambda: d.current_url.startswith(BASE), 10, "the navigation to " + path)
            body = d.find_element(By.TAG_NAME, "body").text
            say(f"  navigation to {path}: {body[:120]!r}")
            check("refused" in body, f"a navigation from the attacker's page to {path} showed: {body[:200]!r}")
        d.get(idle)
        quiet("the attack")
    finally:
        server.shutdown()
    refused = refused_lines()[refused_before:]
    say(f"the server refused {len(refused)} requests from the attacker's page")
    check(len(refused) >= len(CHANGES) * 4, f"only {len(refused)} refusals in the server's log")
    after = snapshot()
    for name in NAMES:
        if before[name] == after[name]:
            continue
        if after[name] == "gone":
            check(False, f"{name} was deleted by the attacker's page")
            continue
        for key in ["log", "status", "thumbs"]:
            check(before[name][key] == after[name][key], f"{name}: its {key} changed:\n{before[name][key]}\n→\n{after[name][key]}")
        bf, af = before[name]["files"], after[name]["files"]
        changed = sorted(k for k in set(bf) | set(af) if bf.get(k) != af.get(k))
        check(not changed, f"{name}: files changed: {changed}")
    check(not any(l for l in served_log()[-2000:] if "internal error" in l), "the server logged an internal error")


def svg_from_the_pages(d, downloads):
    """The SVG output, opened as a person opens it from the pages: no script on their origin."""
    pic = ids["pic"]
    d.get(f"{BASE}/?token={TOKEN}#/w/{pic}")
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", 20, "the pages")
    head = wait(lambda: d.find_element(By.CSS_SELECTOR, '[data-testid="card-head-draw"]'), 10, "the draw card")
    head.click()
    tile = wait(lambda: d.find_element(By.CSS_SELECTOR, '[data-testid="output-draw-picture"]'), 10, "the SVG's tile")
    tile.click()
    link = wait(lambda: d.find_element(By.CSS_SELECTOR, "#viewer a"), 10, "the viewer's Open / download link")
    href = link.get_attribute("href")
    check("token" not in href, f"the link to the SVG carries the token: {href}")
    pages = d.current_window_handle
    link.click()
    time.sleep(1)
    # Opened as it would be from anywhere: a plain navigation (no download attribute to help).
    d.switch_to.window(pages)
    d.set_page_load_timeout(15)
    try:
        d.get(href)
    except Exception as e:  # a download is not a page load
        say(f"opening the SVG: {type(e).__name__}")
    time.sleep(1)
    for handle in d.window_handles:
        d.switch_to.window(handle)
        title = d.title or ""
        check("svg-ran" not in title, f"the SVG's script ran on {d.current_url}: {title}")
        shown = d.execute_script("return document.documentElement && document.documentElement.tagName")
        check(shown != "svg", f"the SVG was shown as a document at {d.current_url}")
    d.switch_to.window(pages)
    quiet("opening the SVG")
    check(os.path.isdir(os.path.join(a.root, "pic")), "the SVG's script deleted its instance")
    got = os.listdir(downloads) if os.path.isdir(downloads) else []
    say(f"downloaded instead of shown: {got}")


downloads = tempfile.mkdtemp(prefix="flowdir-downloads-")
d = browser(downloads=downloads)
try:
    # The victim: the pages opened once (the cookie set), then the questions and the running step as they settle.
    d.get(a.url)
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", 20, "the pages' first render")
    wait(lambda: all(node_state(a.root, "rr", n) == "awaitingUser" for n in ["pick", "look", "settings"]), 20, "rr's questions")
    wait(lambda: node_state(a.root, "slow", "nap") == "runningLocal", 20, "the slow step to run")
    wait(lambda: node_state(a.root, "pic", "draw") == "succeeded", 20, "the SVG to be drawn")
    quiet("the pages' load")
    for name, fn in [("svg", lambda d: svg_from_the_pages(d, downloads)), ("attack", attack)]:
        try:
            fn(d)
        except Exception as e:
            check(False, f"{name}: {e}")
            traceback.print_exc()
            d.save_screenshot(os.path.join(a.artifacts, "failed-hostile-" + name + ".png"))
finally:
    d.quit()
say(f"{len(failures)} failures" + "".join("\nFAIL: " + f for f in failures))
open(os.path.join(a.artifacts, "hostile-report.txt"), "w").write("\n".join(report) + "\n")
sys.exit(min(len(failures), 100))
