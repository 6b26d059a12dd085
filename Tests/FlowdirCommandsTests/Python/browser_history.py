#!/usr/bin/env python3
"""A card's run history, Compare, Retry from a run, card actions, and a phone that comes back, in a real browser.

BrowserTests.swift makes an instance `hist`: `paint` draws a square of its `color` param, `frame`
puts a border of its `width` param around it. `frame` has run three times (run 1 on a red square
with width 4; run 2 on a blue square; run 3 with width 8). This checks that:
- the card shows three rows with trigger, who, duration and result, and each run's params diff;
- Compare shows run 1's and run 3's images side by side;
- typed, unsaved params make the browser ask before the page is left;
- Retry from run 1 runs `frame` with run 1's frozen input (the red square) and params (width 4),
  although `paint` now makes blue;
- a failed card shows its error code and hint; the card blocked behind it offers Open and Retry
  upstream; an awaiting card offers Snooze and Skip, and Skip skips it; a JSON output is shown
  indented; a question that arrives while the page is open shows a toast whose Open goes to it;
  the Action Center groups questions by workflow and snoozes one for 15 minutes;
- at 390x844 the connection state is visible; with the server stopped for 10 s while a command
  changes the instance, the page shows the new state within 2 s of the server's return, and the
  state was visible throughout.
Prints `FAIL: …` for each failure; exit status = failures.

usage: browser_history.py --root ROOT --flowdir BIN --artifacts DIR --serve-log FILE
  It starts `flowdir serve ROOT` itself (and stops and starts it again on the same port, with
  the same token file), in the environment it was given.
"""
import argparse, os, subprocess, sys, time, traceback, urllib.parse

from PIL import Image
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import browser, by, check, failures, instance_id, maybe, node_state, screenshot, wait


ap = argparse.ArgumentParser()
ap.add_argument("--root", required=True)
ap.add_argument("--artifacts", required=True)
ap.add_argument("--flowdir", required=True)
ap.add_argument("--serve-log", required=True)
a = ap.parse_args()


def shot(d, name):
    screenshot(d, a.artifacts, name)


TOKEN_FILE = os.path.join(os.path.dirname(os.path.abspath(a.root)), "serve-token")


class Server:
    """`flowdir serve ROOT`, started again on the port and with the token it first had."""
    def __init__(self):
        self.port, self.p = 0, None

    def start(self):
        log = open(a.serve_log, "a")
        self.p = subprocess.Popen([a.flowdir, "serve", a.root, "--port", str(self.port), "--token-file", TOKEN_FILE],
                                  stdout=subprocess.PIPE, stderr=log, text=True)
        url = self.p.stdout.readline().split()[-1]
        self.port = urllib.parse.urlparse(url).port
        return url

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=30)
os.makedirs(a.artifacts, exist_ok=True)
HIST = instance_id(a.root, "hist")


def runs_shown(d):
    return d.find_elements(By.CSS_SELECTOR, '[data-testid="history-frame"] > li')


def open_card(d, url):
    d.get(url.split("?")[0].rstrip("/") + "/?" + urllib.parse.urlparse(url).query + f"#/w/{HIST}")
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", what="the page")
    wait(lambda: maybe(d, "card-head-frame"), what="frame's card")
    by(d, "card-head-frame").click()
    wait(lambda: len(runs_shown(d)) >= 3, what="three runs in frame's history")


def t_history(d):
    rows = runs_shown(d)
    check(len(rows) == 3, f"three rows, not {len(rows)}")
    for li in rows:
        run = li.get_attribute("data-run")
        trig = li.find_element(By.CSS_SELECTOR, '[data-field="trigger"]').text
        who = li.find_element(By.CSS_SELECTOR, '[data-field="who"]').text
        dur = li.find_element(By.CSS_SELECTOR, '[data-field="duration"]').text
        res = li.find_element(By.CSS_SELECTOR, '[data-field="result"]').text
        check(trig in ("auto", "rerun", "retry"), f"run {run}: trigger {trig!r}")
        check("@" in who, f"run {run}: who {who!r}")
        check(dur.endswith(" s") or "min" in dur, f"run {run}: duration {dur!r}")
        check(res == "Done", f"run {run}: result {res!r}")
    check([li.get_attribute("data-run") for li in rows] == ["3", "2", "1"], "newest first")
    check(maybe(d, "polling-toggle") is None, "no Pause polling on a workflow with no remote step")
    # State icons are drawn from SVG, not a font's symbol (Debian's fonts lacked one: an empty box).
    icon = d.execute_script("const s = getComputedStyle(arguments[0], '::before'); return [s.content, s.maskImage || s.webkitMaskImage]",
                            by(d, "chip-frame"))
    check("svg" in (icon[1] or ""), f"the chip's icon is an SVG mask: {icon}")
    diff3 = by(d, "run-diff-frame-3").text
    check("width: 4 → 8" in diff3, f"run 3's diff: {diff3!r}")
    check(maybe(d, "run-diff-frame-2") is None, "run 2 changed no param of frame (its input changed)")
    shot(d, "history")


def t_compare(d):
    by(d, "compare-pick-frame-1").click()
    by(d, "compare-pick-frame-3").click()
    wait(lambda: by(d, "compare-frame").is_enabled(), what="Compare enabled with two runs chosen")
    by(d, "compare-frame").click()
    wait(lambda: maybe(d, "compare-view"), what="the comparison")
    imgs = d.find_elements(By.CSS_SELECTOR, '[data-testid="compare-view"] img')
    check(len(imgs) == 2, f"two images side by side, not {len(imgs)}")
    wait(lambda: all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", i) for i in imgs), what="both images")
    widths = [d.execute_script("return arguments[0].naturalWidth", i) for i in imgs]
    check(widths == [72, 80], f"run 1 (border 4) and run 3 (border 8): natural widths {widths}")
    tops = [i.rect["y"] for i in imgs]
    check(abs(tops[0] - tops[1]) < 2, f"side by side: tops {tops}")
    shot(d, "history-compare")
    by(d, "viewer-close").click()


def t_unsaved_params_warn(d):
    # The page asks the browser to warn (it cancels `beforeunload`) while params are typed and not saved.
    leaving = "const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented"
    check(not d.execute_script(leaving), "no warning with nothing typed")
    field = by(d, "param-frame-width")
    field.clear()
    field.send_keys("9")
    check(d.execute_script(leaving), "a warning with params typed and not saved")
    d.execute_script("FD.state.drafts = {};")  # given up: the field shows the saved value at the next render
    check(not d.execute_script(leaving), "no warning once the draft is gone")


def t_retry_from_run_1(d):
    by(d, "retry-from-frame-1").click()
    wait(lambda: len(runs_shown(d)) == 4 and runs_shown(d)[0].find_element(By.CSS_SELECTOR, '[data-field="result"]').text == "Done",
         timeout=30, what="run 4 done in the history")
    # Read in one script: a live re-render between two reads would leave a stale element.
    top = d.execute_script("const r = document.querySelector('[data-testid=\"history-frame\"] > li');"
                           "return r && [r.dataset.run, r.querySelector('[data-field=\"trigger\"]').textContent.trim()]")
    check(top == ["4", "retry"], f"run 4 on top, its trigger retry: {top}")
    out = os.path.join(a.root, "hist", "nodes", "frame", "out", "image.png")
    im = Image.open(out).convert("RGB")
    check(im.size == (72, 72), f"run 1's width 4 again: {im.size}")
    check(im.getpixel((36, 36))[0] > 200 and im.getpixel((36, 36))[2] < 60, f"run 1's red square again, not paint's blue: {im.getpixel((36, 36))}")
    shot(d, "history-retried")


def t_card_actions(d, url):
    cards = instance_id(a.root, "cards")
    d.get(url.split("#")[0] + f"#/w/{cards}")
    wait(lambda: maybe(d, "card-error-boom"), what="boom's error on its card")
    err = by(d, "card-error-boom").text
    check("exit(3)" in err and "flowdir logs" in err, f"the failed card's code and hint: {err!r}")
    check(maybe(d, "card-retry-boom") is not None, "Retry on the failed card")
    check(maybe(d, "card-retry-upstream-after") is not None, "Retry upstream on the card blocked behind it")
    by(d, "card-open-upstream-after").click()
    wait(lambda: "pulse" in by(d, "card-boom").get_attribute("class"), what="Open upstream goes to boom's card")
    check(maybe(d, "card-snooze-pick") is not None, "Snooze on the awaiting card")
    run = maybe(d, "card-run-after")
    check(run is not None and not run.is_enabled() and "needs image" in run.text, f"the blocked card's Run names what it needs: {run and run.text!r}")
    shot(d, "card-actions")
    # A JSON output, shown indented.
    by(d, "card-head-facts").click()
    wait(lambda: maybe(d, "output-facts-data"), what="facts' output tile")
    by(d, "output-facts-data").click()
    wait(lambda: by(d, "viewer-text").get_attribute("data-ready") == "1", what="the JSON in the viewer")
    text = by(d, "viewer-text").text
    check(text.splitlines()[:2] == ["{", '  "a": 1,'], f"JSON shown indented: {text!r}")
    shot(d, "viewer-json")
    by(d, "viewer-close").click()
    # Replace input…: a picture of the person's in place of what boom failed to make; after then runs on it.
    mine = os.path.join(a.root, "..", "mine.png")
    Image.new("RGB", (40, 30), (0, 200, 0)).save(mine)
    by(d, "card-replace-after-image").send_keys(os.path.abspath(mine))
    wait(lambda: by(d, "card-boom").get_attribute("data-state") == "succeeded", timeout=20, what="boom succeeded with the person's file")
    wait(lambda: node_state(a.root, "cards", "after") == "succeeded", timeout=30, what="after ran on the replaced input")
    im = Image.open(os.path.join(a.root, "cards", "nodes", "after", "out", "image.png")).convert("RGB")
    check(im.getpixel((im.size[0] // 2, im.size[1] // 2))[1] > 150, f"after framed the person's green picture: {im.getpixel((im.size[0] // 2, im.size[1] // 2))}")
    run = open(os.path.join(a.root, "cards", "nodes", "boom", "runs", "2", "run.yaml")).read()
    check("trigger: answer" in run and "inbox/boom.image.png" in run, f"boom's run 2 is the person's: {run}")
    # Found and scrolled in one script: a live re-render between the two would leave a stale element.
    d.execute_script("document.querySelector('[data-testid=\"card-after\"]').scrollIntoView({block: 'center'})")
    shot(d, "card-replaced-input")
    by(d, "card-skip-pick").click()
    wait(lambda: by(d, "card-pick").get_attribute("data-state") == "skipped", timeout=20, what="Skip from the card")
    check(node_state(a.root, "cards", "pick") == "skipped", "pick is skipped in its folder")
    # A question that arrives while the page is open: a toast with Open.
    # (Its exit status is the instance's: boom has failed.)
    r = subprocess.run([a.flowdir, "rerun", os.path.join(a.root, "cards"), "pick"], capture_output=True, text=True)
    check(node_state(a.root, "cards", "pick") == "awaitingUser", f"flowdir rerun pick: {r.stdout}{r.stderr}")
    wait(lambda: maybe(d, "question-toast"), timeout=20, what="a toast for the new question")
    check("Choose for pick" in by(d, "question-toast").text, f"the toast names it: {by(d, 'question-toast').text!r}")
    shot(d, "question-toast")
    by(d, "question-toast-open").click()
    wait(lambda: "pulse" in by(d, "card-pick").get_attribute("class"), what="Open goes to pick's card")
    # The Action Center: grouped by workflow, with snooze choices.
    d.get(url.split("#")[0] + "#/inbox")
    wait(lambda: maybe(d, f"group-pending-{cards}"), what="the cards workflow's group in Pending")
    check(maybe(d, f"await-{cards}-pick") is not None, "pick's question in its group")
    by(d, f"snooze-more-{cards}-pick").click()
    by(d, f"snooze-{cards}-pick-15m").click()
    wait(lambda: by(d, f"await-{cards}-pick").get_attribute("data-section") == "Snoozed", what="pick snoozed")
    text = open(os.path.join(a.root, "cards", "inbox", "pick.await.yaml")).read()
    check("snooze:" in text and "count: 1" in text, f"the snooze in pick.await.yaml: {text}")
    shot(d, "action-center-grouped")


def t_presets(d, url):
    # The tool's presets: choosing one fills the params it names, unsaved; Save writes params.yaml.
    cards = instance_id(a.root, "cards")
    d.get(url.split("#")[0] + f"#/w/{cards}")
    wait(lambda: maybe(d, "card-head-after"), what="after's card")
    by(d, "card-head-after").click()
    wait(lambda: maybe(d, "preset-after"), what="after's Presets menu")
    Select(by(d, "preset-after")).select_by_value("thick")
    check(by(d, "param-after-width").get_attribute("value") == "12", f"thick fills width 12: {by(d, 'param-after-width').get_attribute('value')!r}")
    shot(d, "card-presets")
    by(d, "save-params-after").click()
    path = os.path.join(a.root, "cards", "nodes", "after", "params.yaml")
    wait(lambda: "width: 12" in open(path).read(), what="width: 12 saved to after's params.yaml")


def t_phone_comes_back(url):
    d = browser(phone=True)
    try:
        open_card(d, url)
        pill = by(d, "live-status")
        check(pill.is_displayed() and pill.text == "Live", f"the pill at 390 px: {pill.is_displayed()} {pill.text!r}")
        SERVER.stop()
        wait(lambda: d.execute_script("return document.body.dataset.live") == "reconnecting", what="the page to see the server gone")
        seen = []
        # A command changes the instance while the server is away.
        r = subprocess.run([a.flowdir, "rerun", os.path.join(a.root, "hist"), "frame"], capture_output=True, text=True,
                           env=dict(os.environ))
        check(r.returncode == 0, f"flowdir rerun: {r.stdout}{r.stderr}")
        end = time.time() + 10
        while time.time() < end:
            seen.append((by(d, "live-status").is_displayed(), by(d, "live-status").text))
            time.sleep(0.25)
        shot(d, "phone-offline")
        SERVER.start()
        back = time.time()
        wait(lambda: len(runs_shown(d)) == 5, timeout=2, what="run 5 shown within 2 s of the server's return")
        check(time.time() - back <= 2, f"the new state {time.time() - back:.2f}s after the server came back")
        wait(lambda: by(d, "live-status").text == "Live", timeout=5, what="Live again")
        check(all(s[0] for s in seen), "the pill was visible throughout")
        check(all(s[1] in ("Reconnecting…", "Offline") for s in seen), f"it said so throughout: {sorted(set(s[1] for s in seen))}")
        shot(d, "phone-back")
    finally:
        d.quit()


SERVER = Server()
URL = SERVER.start()
d = browser()
try:
    open_card(d, URL)
    for t in (t_history, t_compare, t_unsaved_params_warn, t_retry_from_run_1):
        try:
            t(d)
        except Exception:
            check(False, t.__name__ + ": " + traceback.format_exc())
    try:
        t_card_actions(d, URL)
    except Exception:
        check(False, "t_card_actions: " + traceback.format_exc())
    try:
        t_presets(d, URL)
    except Exception:
        check(False, "t_presets: " + traceback.format_exc())
finally:
    d.quit()
try:
    t_phone_comes_back(URL)
except Exception:
    check(False, "t_phone_comes_back: " + traceback.format_exc())
finally:
    SERVER.stop()
print(f"{len(failures)} failures")
sys.exit(len(failures))
