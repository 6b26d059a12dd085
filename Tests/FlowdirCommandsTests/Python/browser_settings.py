#!/usr/bin/env python3
"""The Settings page in a real browser (docs/serve.md, "Settings").

BrowserTests.swift makes an instance `pics` whose step `noise` ran twice (each run a large PNG,
kept beside git), synced to a hub, so run 1's content is on the hub and no longer current; a
config with the endpoint `gpu` (a job server that answers, its token in secrets.yaml) and `down`
(nothing listens); and starts `flowdir serve` with a token file. This checks that:
- Settings shows this server's address and its token file, never the token;
- `gpu` is reachable and has its token set; `down` is not reachable;
- storage shows the instance and what could be freed; Free up space first shows a preview
  (run 1's image) and drops nothing, then frees it (its content leaves .git/lfs/objects), and
  the usage is shown again;
- Pin pins the instance (its pins file says so) and Unpin lets it go;
- no secret (the endpoint's token, its webhook secret, the server's token) is in any page, script
  or API response the page reads; and the page works at 390x844.
Prints `FAIL: …` for each failure; exit status = failures.

usage: browser_settings.py --url URL --root ROOT --artifacts DIR --secret S [--secret S …]
"""
import argparse, json, os, sys, traceback

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import axe_check, browser, by, check, failures, instance_id, maybe, rev, wait

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--root", required=True)
ap.add_argument("--artifacts", required=True)
ap.add_argument("--token-file", required=True)
ap.add_argument("--secret", action="append", default=[])
a = ap.parse_args()
os.makedirs(a.artifacts, exist_ok=True)
PICS = instance_id(a.root, "pics")
OBJECTS = os.path.join(a.root, "pics", ".git", "lfs", "objects")


def contents():
    return sorted(f for _, _, files in os.walk(OBJECTS) for f in files)


def open_settings(d):
    d.get(a.url)
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", what="the page")
    by(d, "nav-settings").click()
    wait(lambda: d.execute_script("return document.body.dataset.page") == "settings" and maybe(d, "storage-" + PICS), what="Settings")


def t_server_and_endpoints(d):
    check(by(d, "nav-settings").get_attribute("aria-current") == "page", "the Settings tab is current")
    check(by(d, "server-url").text.startswith("http://127.0.0.1:"), f"the address: {by(d, 'server-url').text!r}")
    check(by(d, "server-token-file").text == os.path.realpath(a.token_file), f"the token file: {by(d, 'server-token-file').text!r}")
    wait(lambda: by(d, "endpoint-reach-gpu").get_attribute("data-reachable") in ("yes", "no")
         and by(d, "endpoint-reach-down").get_attribute("data-reachable") in ("yes", "no"), what="both endpoints asked")
    check(by(d, "endpoint-reach-gpu").get_attribute("data-reachable") == "yes", f"gpu reachable: {by(d, 'endpoint-reach-gpu').text!r}")
    check("reachable" in by(d, "endpoint-reach-gpu").text and "✓" in by(d, "endpoint-reach-gpu").text, "reachable in words and a mark")
    check(by(d, "endpoint-reach-down").get_attribute("data-reachable") == "no", f"down not reachable: {by(d, 'endpoint-reach-down').text!r}")
    check("not reachable" in by(d, "endpoint-reach-down").text, "not reachable in words")
    check("set" in by(d, "endpoint-gpu").text, "gpu's token is set")
    check("not set" in by(d, "endpoint-down").text, "down has no token, and says so")
    d.save_screenshot(os.path.join(a.artifacts, "settings.png"))
    axe_check(d, "settings")


def t_free(d):
    before = contents()
    check(len(before) == 2, f"two runs' content here: {before}")
    freeable = by(d, "freeable-" + PICS).text
    check(freeable not in ("0 B", ""), f"something could be freed: {freeable!r}")
    by(d, "free-preview").click()
    wait(lambda: maybe(d, "free-summary"), what="the preview")
    summary = by(d, "free-summary").text
    check(summary.startswith("Would free") and "(1 file)" in summary, f"the preview: {summary!r}")
    listed = by(d, "free-list").text
    check("nodes/noise/out/image.png" in listed and "run 1" in listed, f"the preview lists run 1's image: {listed!r}")
    check(contents() == before, "a preview drops nothing")
    d.save_screenshot(os.path.join(a.artifacts, "settings-free-preview.png"))
    axe_check(d, "settings-free-preview")
    r = rev(d)
    by(d, "free-now").click()
    wait(lambda: by(d, "free-summary").text.startswith("Freed") and rev(d) > r, what="freed")
    after = contents()
    check(len(after) == 1 and set(after) < set(before), f"run 1's content left .git/lfs/objects: {before} → {after}")
    check(by(d, "freeable-" + PICS).text == "0 B", f"nothing more to free: {by(d, 'freeable-' + PICS).text!r}")
    by(d, "free-close").click()
    check(maybe(d, "free-box") is None, "Close takes the result away")


def t_pin(d):
    pins = os.path.join(a.root, "pics", ".flowdir", "pins")
    b = by(d, "pin-" + PICS)
    check(b.get_attribute("aria-pressed") == "false", "not pinned at first")
    r = rev(d)
    b.click()
    wait(lambda: rev(d) > r and by(d, "pin-" + PICS).get_attribute("aria-pressed") == "true", what="pinned")
    check(open(pins).read() == "*\n", f"the pins file: {open(pins).read()!r}")
    r = rev(d)
    # By keyboard: focus and Enter.
    by(d, "pin-" + PICS).send_keys(Keys.ENTER)
    wait(lambda: rev(d) > r and by(d, "pin-" + PICS).get_attribute("aria-pressed") == "false", what="unpinned")
    check(open(pins).read() == "", f"the pins file after Unpin: {open(pins).read()!r}")


def t_no_secret(d):
    texts = {"page": d.page_source, "address bar": d.current_url}
    for path in ["/", "/app.js", "/settings.js", "/api/settings", "/api/settings/endpoints", "/api/storage", "/api/instances", f"/api/instances/{PICS}"]:
        texts[path] = d.execute_async_script(
            "const done = arguments[arguments.length - 1]; fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text()).then(done, e => done('ERR ' + e))", path)
    check(all(not t.startswith("ERR ") for t in texts.values()), "every response read")
    for secret in a.secret:
        for where, text in texts.items():
            check(secret not in text, f"a secret ({secret[:4]}…) is in {where}")
    settings = json.loads(texts["/api/settings"])
    tokens = {e["name"]: e["token"] for e in settings["endpoints"]}
    check(tokens == {"gpu": True, "down": False}, f"the API says whether a token is set, not what it is: {tokens}")


def t_phone():
    d = browser(phone=True)
    try:
        open_settings(d)
        wait(lambda: by(d, "endpoint-reach-gpu").get_attribute("data-reachable") == "yes", what="gpu asked, on a phone")
        wide = d.execute_script("return document.documentElement.scrollWidth > window.innerWidth + 1")
        check(not wide, "nothing wider than the phone's screen")
        check(by(d, "live-status").is_displayed(), "the connection state shows on a phone")
        d.save_screenshot(os.path.join(a.artifacts, "settings-phone.png"))
        axe_check(d, "settings-phone")
    finally:
        d.quit()


d = browser()
try:
    open_settings(d)
    for t in (t_server_and_endpoints, t_free, t_pin, t_no_secret):
        try:
            t(d)
        except Exception:
            check(False, f"{t.__name__}: {traceback.format_exc()}")
finally:
    d.quit()
try:
    t_phone()
except Exception:
    check(False, f"t_phone: {traceback.format_exc()}")
print(f"{len(failures)} failures", flush=True)
sys.exit(len(failures))
