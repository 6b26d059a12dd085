#!/usr/bin/env python3
"""flowdir serve in a real browser: Debian's chromium through chromedriver and Selenium.

BrowserTests.swift makes the instances and starts `flowdir serve`; this
drives the pages as a person would and checks what they do to the folders.
Every check that fails is printed as `FAIL: …`; the exit status is the
number of failures. Screenshots of each screen go to --artifacts.

usage: browser_ui.py --url URL --root ROOT --artifacts DIR
  ROOT holds the instances: seed/ (the seed's stylize-with-mask flow, run
  here), rr/ (review and render: three questions), slow/ (a step that
  sleeps), done/ (finished).
"""
import argparse, base64, io, json, os, subprocess, sys, time, traceback, urllib.error, urllib.parse, urllib.request

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import browser, by, check, failures, maybe, node_state, rev, screenshot, wait

import browser_common

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--root", required=True)
ap.add_argument("--artifacts", required=True)
ap.add_argument("--only", default="", help="comma-separated check names to run (default: all)")
a = ap.parse_args()


def shot(d, name):
    screenshot(d, a.artifacts, name)


os.makedirs(a.artifacts, exist_ok=True)
# Its own screenshots of an earlier run (numbered, or of a failure); the other scripts' stay.
for old in os.listdir(a.artifacts):
    if old.endswith(".png") and (old[:2].isdigit() or old.startswith("failed-")):
        os.remove(os.path.join(a.artifacts, old))
parsed = urllib.parse.urlparse(a.url)
BASE = f"{parsed.scheme}://{parsed.netloc}"
TOKEN = urllib.parse.parse_qs(parsed.query)["token"][0]


def api(path, method="GET", body=None, token=TOKEN):
    req = urllib.request.Request(BASE + path, method=method, data=None if body is None else json.dumps(body).encode())
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if method != "GET":
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())


def instance_id(name):
    return browser_common.instance_id(a.root, name)


def state(name, node):
    return node_state(a.root, name, node)


def go(d, fragment):
    d.get(f"{BASE}/?token={TOKEN}#{fragment}")
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", 20, "the page's first render")


def open_editor(d, what):
    return wait(lambda: d.execute_script(
        "const e = document.querySelector('[data-testid=editor]'); return e && e.open ? e : null"), 10, what)


def card_state(d, node):
    el = maybe(d, "card-" + node)
    return el.get_attribute("data-state") if el else None


def console_errors(d):
    try:
        return [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]
    except Exception:
        return []


def record_states(d):
    """Every data-state a card takes, as the page renders it (a MutationObserver)."""
    d.execute_script("""
        window.__states = window.__states || [];
        const seen = (el) => window.__states.push([el.dataset.testid, el.dataset.state, performance.now()]);
        document.querySelectorAll('[data-testid^="card-"][data-state]').forEach(seen);
        new MutationObserver((ms) => ms.forEach((m) => {
            const els = m.type === 'attributes' ? [m.target] : [...m.addedNodes].flatMap((n) =>
                n.querySelectorAll ? [n, ...n.querySelectorAll('[data-testid^="card-"][data-state]')] : []);
            els.filter((el) => el.dataset && el.dataset.state && /^card-/.test(el.dataset.testid || '')).forEach(seen);
        })).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-state']});
    """)


def states_seen(d, node):
    return [s for (t, s, _) in d.execute_script("return window.__states || []") if t == "card-" + node]


def draw(d, canvas, strokes):
    """Mouse strokes across the canvas, as fractions of its size."""
    # As shown (zoomed to fit), not as laid out: the canvas is the image's own size.
    w, h = d.execute_script("const b = arguments[0].getBoundingClientRect(); return [b.width, b.height]", canvas)
    for stroke in strokes:
        (x0, y0) = stroke[0]
        chain = ActionChains(d).move_to_element_with_offset(canvas, int((x0 - 0.5) * w), int((y0 - 0.5) * h)).click_and_hold()
        for (x, y) in stroke[1:]:
            chain = chain.move_to_element_with_offset(canvas, int((x - 0.5) * w), int((y - 0.5) * h))
        chain.release().perform()


def png_size_and_pixel(path, fx, fy):
    from PIL import Image
    im = Image.open(path).convert("L")
    return im.size, im.getpixel((int(fx * (im.size[0] - 1)), int(fy * (im.size[1] - 1))))


def photo_size():
    from PIL import Image
    return Image.open(os.path.join(a.root, "photo.png")).size


# ---------------------------------------------------------------------------------------------

def t_token(d):
    for path in ["/", "/api/instances", "/app.js"]:
        try:
            urllib.request.urlopen(BASE + path, timeout=10)
            check(False, f"{path} without the token answered 200")
        except urllib.error.HTTPError as e:
            check(e.code == 401, f"{path} without the token: {e.code}, not 401")
    d.get(BASE + "/")
    check("401" in d.find_element(By.TAG_NAME, "body").text, "the page without the token does not say 401")
    console_errors(d)  # the 401 itself, read and dropped
    go(d, "/")
    check(d.execute_script("return document.body.dataset.page") == "list", "the list is not the first page")
    # The cookie carries it from here: the token leaves the address bar, and no script can read it.
    wait(lambda: "token" not in d.execute_script("return location.search"), 10, "the token to leave the address bar")
    check(d.execute_script("return location.hash") == "#/", "the fragment was lost with the token")
    check(TOKEN not in d.execute_script("return document.cookie + document.documentElement.outerHTML + history.length"),
          "the page's script can read the token")
    d.refresh()
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", 20, "the page to load again on the cookie alone")
    shot(d, "01-workflows")


def t_many_loads(d):
    """Page after page loaded in one tab (links from notifications do that): none keeps a
    connection the next ones need (a browser has six per server; each page's event stream is one)."""
    for i in range(10):
        go(d, "/inbox" if i % 2 else "/")
    answered = d.execute_async_script("""
        const done = arguments[0], t = setTimeout(() => done('no answer in 5 s'), 5000);
        fetch('/api/inbox').then((r) => { clearTimeout(t); done(r.status); }, (e) => { clearTimeout(t); done(String(e)); });""")
    check(answered == 200, f"after ten page loads a request of the page got: {answered}")
    wait(lambda: d.execute_script("return document.body.dataset.live") == "open", 10, "the live stream after ten page loads")


def t_filter_search(d):
    go(d, "/")
    ids = {n: instance_id(n) for n in ["seed", "rr", "slow", "done"]}
    rows = lambda: {el.get_attribute("data-testid")[4:] for el in d.find_elements(By.CSS_SELECTOR, '[data-testid^="row-"]')}
    wait(lambda: set(ids.values()) <= rows(), 10, "every instance in the list")
    by(d, "filter-done").click()
    wait(lambda: rows() == {ids["done"]}, 5, "Done to show only the finished instance")
    check(by(d, "filter-done").get_attribute("aria-pressed") == "true", "the Done filter is not pressed")
    by(d, "filter-active").click()
    wait(lambda: ids["done"] not in rows() and ids["seed"] in rows(), 5, "Active to leave the finished one out")
    by(d, "filter-all").click()
    search = by(d, "search")
    search.send_keys("review")
    wait(lambda: rows() == {ids["rr"]}, 5, "search 'review' to show only Review and render")
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys(Keys.DELETE)
    wait(lambda: set(ids.values()) <= rows(), 5, "the whole list again")
    row = by(d, "row-" + ids["seed"])
    check("step" in row.text, f"a row does not say its steps: {row.text!r}")
    # A thumbnail of the latest image output (the phone instance's photo), made by the server.
    row_img = lambda: by(d, "row-" + instance_id("phone")).find_element(By.CSS_SELECTOR, "img.thumb")
    d.execute_script("arguments[0].scrollIntoView()", row_img())
    wait(lambda: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", row_img()), 10, "the row's thumbnail to load")
    check(d.execute_script("return arguments[0].naturalWidth", row_img()) <= 320, "the thumbnail is larger than 320 px")
    badge = maybe(d, "awaits-" + ids["seed"])
    check(badge is not None and badge.text.strip() != "", "the seed's row has no pending-questions badge")
    # Its question holds the workflow up (`blocking`, the default): a red dot, and words for a screen reader.
    check(badge is not None and badge.get_attribute("data-blocking") == "1" and badge.find_elements(By.CSS_SELECTOR, ".red-dot")
          and "holding it up" in badge.get_attribute("textContent"), "the seed's badge shows its blocking question")


def t_seed(d):
    """The seed's photo by upload, its mask drawn; the next cards run and finish without a reload."""
    sid = instance_id("seed")
    go(d, "/")
    by(d, "open-row-" + sid).click()
    wait(lambda: d.execute_script("return document.body.dataset.page") == "detail", 10, "the detail page")
    wait(lambda: card_state(d, "load1") == "awaitingUser", 10, "load1 awaiting")
    shot(d, "02-detail")
    record_states(d)
    d.execute_script("window.__noReload = 1")
    by(d, "card-head-load1").click()
    editor = open_editor(d, "the asset picker")
    check(editor.get_attribute("data-type") == "select_asset", "load1's editor is not the asset picker")
    by(d, "asset-file").send_keys(os.path.join(a.root, "photo.png"))
    wait(lambda: maybe(d, "asset-preview") is not None, 5, "the picked photo's preview")
    shot(d, "03-asset-picker")
    by(d, "editor-submit").click()
    wait(lambda: card_state(d, "load1") == "succeeded", 15, "load1 to succeed")
    wait(lambda: card_state(d, "mask1") == "awaitingUser", 15, "mask1 awaiting")
    by(d, "card-head-mask1").click()
    editor = open_editor(d, "the mask editor")
    check(editor.get_attribute("data-type") == "draw_mask", "mask1's editor is not the mask editor")
    wait(lambda: d.execute_script("const e = document.querySelector('.mask-editor'); return e && e.dataset.ready") == "1", 10, "the mask editor's image")
    canvas = by(d, "mask-canvas")
    draw(d, canvas, [[(0.3, 0.3), (0.5, 0.4), (0.7, 0.5)], [(0.4, 0.6), (0.6, 0.6)]])
    shot(d, "04-mask-editor")
    by(d, "editor-submit").click()
    wait(lambda: card_state(d, "mask1") == "succeeded", 15, "mask1 to succeed")
    wait(lambda: card_state(d, "compress1") == "succeeded", 60, "compress1 to succeed (stylize then compress)")
    check(d.execute_script("return window.__noReload") == 1, "the page was reloaded")
    # stylize1 runs for a while and is seen running; compress1 may run
    # quicker than a render, but is seen done, all without a reload.
    seen = states_seen(d, "stylize1")
    check(any(s in ("runningLocal", "runningRemote", "queuedRemote") for s in seen) and seen[-1] == "succeeded",
          f"stylize1 was not seen running then done: {seen}")
    check(states_seen(d, "compress1")[-1:] == ["succeeded"], f"compress1 was not seen done: {states_seen(d, 'compress1')}")
    mask = os.path.join(a.root, "seed/nodes/mask1/out/mask.png")
    size, painted = png_size_and_pixel(mask, 0.5, 0.4)
    check(size == photo_size(), f"the mask is {size}, the photo {photo_size()}")
    check(painted > 200, f"the mask is not white where a stroke went ({painted})")
    check(png_size_and_pixel(mask, 0.05, 0.95)[1] < 50, "the mask is not black where nothing was drawn")
    shot(d, "05-detail-done")


def t_action_center(d):
    rid = instance_id("rr")
    go(d, "/inbox")
    wait(lambda: maybe(d, f"await-{rid}-look") is not None, 10, "rr's questions in the Action Center")
    check(maybe(d, f"group-pending-{rid}") is not None, "rr's questions grouped under their workflow")
    # A preview of the image a question is about (the photo to mask).
    pid = instance_id("phone")
    wait(lambda: d.execute_script("const i = arguments[0]; return i && i.complete && i.naturalWidth > 0", maybe(d, f"preview-{pid}-mask1")),
         20, "a preview of the photo to mask")
    shot(d, "06-action-center")
    by(d, f"snooze-{rid}-look").click()
    wait(lambda: by(d, f"await-{rid}-look").get_attribute("data-section").lower() == "snoozed", 10, "look to be snoozed")
    look = [i for i in api("/api/inbox")["items"] if i["instanceId"] == rid and i["node"] == "look"]
    check(look and look[0].get("snoozedUntil"), f"the snooze is not in look.await.yaml: {look}")
    by(d, f"skip-{rid}-extra").click()
    wait(lambda: state("rr", "extra") == "skipped", 10, "extra to be skipped")
    # Open: to the card, scrolled to and pulsing, the editor not opened.
    by(d, f"open-{rid}-settings").click()
    wait(lambda: d.execute_script("return location.hash").endswith(f"/w/{rid}/settings"), 10, "the card's URL")
    wait(lambda: maybe(d, "card-settings"), 10, "the settings card")
    # Found afresh each time: a live update may render the card again.
    wait(lambda: "pulse" in (by(d, "card-settings").get_attribute("class") or ""), 5, "the card to pulse")
    check(not d.execute_script("const e = document.querySelector('[data-testid=editor]'); return !!(e && e.open)"), "Open opened the editor")
    check(state("rr", "settings") == "awaitingUser", "Open claimed or answered the question")
    # The card itself claims and opens the editor; closing it unanswered gives the claim up.
    claimed = lambda: ([n for n in api(f"/api/instances/{rid}")["nodes"] if n["id"] == "settings"][0].get("await") or {}).get("claimedBy")
    by(d, "card-head-settings").click()
    open_editor(d, "the settings editor")
    wait(claimed, 10, "the click to claim the question")
    ActionChains(d).send_keys(Keys.ESCAPE).perform()
    wait(lambda: not claimed(), 10, "closing the editor to release the claim")
    in_view = d.execute_script("const r = document.querySelector('[data-testid=card-settings]').getBoundingClientRect(); "
                               "return r.top >= 0 && r.bottom <= innerHeight + 1")
    check(in_view, "the opened card is not scrolled into view")
    settings = [n for n in api(f"/api/instances/{rid}")["nodes"] if n["id"] == "settings"][0]
    check(not (settings.get("await") or {}).get("claimedBy"), f"Open claimed the question: {settings.get('await')}")


def t_params(d):
    sid = instance_id("seed")
    go(d, f"/w/{sid}")
    head = wait(lambda: maybe(d, "card-head-compress1"), 10, "compress1's card")
    if maybe(d, "param-compress1-targetMB") is None:
        head.click()
    field = wait(lambda: maybe(d, "param-compress1-targetMB"), 5, "the targetMB field")
    field.clear()
    field.send_keys("0.3")
    by(d, "save-params-compress1").click()
    params = os.path.join(a.root, "seed/nodes/compress1/params.yaml")
    wait(lambda: "targetMB: 0.3" in open(params).read(), 10, "params.yaml to say targetMB: 0.3")
    log = lambda: subprocess.run(["git", "-C", os.path.join(a.root, "seed"), "log", "-20", "--format=%an|%s"],
                                 capture_output=True, text=True).stdout.splitlines()
    edits = lambda: [l for l in log() if "params of compress1" in l.lower()]
    wait(edits, 10, "the edit's commit")
    check(not edits()[0].startswith("flowdir|"), f"the edit was committed as flowdir, not the person: {edits()}")
    shot(d, "07-params")


def t_cancel(d):
    lid = instance_id("slow")
    go(d, f"/w/{lid}")
    wait(lambda: card_state(d, "nap") == "runningLocal", 20, "the slow step to run")
    if maybe(d, "cancel-nap") is None:
        by(d, "card-head-nap").click()
    by(d, "cancel-nap").click()
    wait(lambda: card_state(d, "nap") == "cancelled", 20, "the step to be cancelled")
    check(state("slow", "nap") == "cancelled", "state.yaml is not cancelled")


def t_shell_drop(d):
    rid = instance_id("rr")
    go(d, f"/w/{rid}")
    wait(lambda: card_state(d, "pick") == "awaitingUser", 10, "pick awaiting")
    before = rev(d)
    data = open(os.path.join(a.root, "photo.png"), "rb").read()
    tmp = os.path.join(a.root, "rr/inbox/.pick.tmp")
    open(tmp, "wb").write(data)
    dropped = time.time()
    os.rename(tmp, os.path.join(a.root, "rr/inbox/pick.image.png"))
    wait(lambda: rev(d) > before, 5, "the page to update after a dropped file")
    shown = time.time() - dropped
    check(shown <= 1.0, f"a file dropped into inbox/ showed after {shown:.2f}s, not within 1 s")
    wait(lambda: card_state(d, "pick") == "succeeded", 10, "pick to be answered by the dropped file")
    print(f"dropped file shown after {shown * 1000:.0f} ms", flush=True)


def t_keyboard_and_names(d):
    rid = instance_id("rr")
    go(d, "/")
    # Every control has a name, and no state is colour alone (each card's chip has words).
    for page in ["/", "/inbox", f"/w/{rid}", f"/w/{instance_id('seed')}"]:
        go(d, page)
        time.sleep(0.2)
        for el in d.find_elements(By.CSS_SELECTOR, "a[href], button, input, select, textarea, [role=button], [tabindex]:not([tabindex='-1'])"):
            if not el.is_displayed():
                continue
            name = (el.accessible_name or "").strip()
            check(name != "", f"{page}: a {el.tag_name} ({el.get_attribute('data-testid') or el.get_attribute('outerHTML')[:80]}) has no accessible name")
        for card in d.find_elements(By.CSS_SELECTOR, '[data-testid^="card-"][data-state]'):
            node = card.get_attribute("data-testid")[5:]
            chip = maybe(d, "chip-" + node)
            check(chip is not None and chip.text.strip() != "", f"{page}: card {node} shows its state without words")
    # Keyboard only: from the list, Tab to the workflow, open it, open a question, answer it.
    go(d, "/")
    body = d.find_element(By.TAG_NAME, "body")
    target = "open-row-" + rid
    for _ in range(60):
        ActionChains(d).send_keys(Keys.TAB).perform()
        if d.switch_to.active_element.get_attribute("data-testid") == target:
            break
    check(d.switch_to.active_element.get_attribute("data-testid") == target, "Tab never reached the workflow's link")
    ActionChains(d).send_keys(Keys.ENTER).perform()
    wait(lambda: d.execute_script("return document.body.dataset.page") == "detail", 10, "Enter to open the workflow")
    wait(lambda: card_state(d, "settings") == "awaitingUser", 10, "settings awaiting")
    head = "card-head-settings"
    for _ in range(80):
        ActionChains(d).send_keys(Keys.TAB).perform()
        if d.switch_to.active_element.get_attribute("data-testid") == head:
            break
    check(d.switch_to.active_element.get_attribute("data-testid") == head, "Tab never reached the settings card")
    ActionChains(d).send_keys(Keys.ENTER).perform()
    editor = open_editor(d, "Enter to open the editor")
    check(editor.get_attribute("data-type") == "confirm_params", "the settings editor is not param confirm")
    for _ in range(40):
        if d.switch_to.active_element.get_attribute("data-testid") == "editor-submit":
            break
        ActionChains(d).send_keys(Keys.TAB).perform()
    check(d.switch_to.active_element.get_attribute("data-testid") == "editor-submit", "Tab never reached Approve")
    ActionChains(d).send_keys(Keys.ENTER).perform()
    wait(lambda: state("rr", "settings") == "succeeded", 10, "settings approved from the keyboard")


def t_new_and_delete(d):
    """New from Template (a root's workflows/ offers it) makes an instance and opens it; Delete asks first."""
    go(d, "/")
    by(d, "new-from-template").click()
    wait(lambda: d.execute_script("const e = document.getElementById('new-dialog'); return e && e.open && e.querySelector('form')"), 10,
         "the New from Template dialog")
    shot(d, "11-new-from-template")
    sel = by(d, "new-template")
    names = [o.text for o in sel.find_elements(By.TAG_NAME, "option")]
    check("Finished notes" in names, f"the root's template is offered: {names}")
    for o in sel.find_elements(By.TAG_NAME, "option"):
        if o.text == "Finished notes":
            o.click()
    by(d, "new-name").send_keys("Made from the page")
    by(d, "new-submit").click()
    wait(lambda: d.execute_script("return document.body.dataset.page") == "detail" and maybe(d, "detail-title")
         and by(d, "detail-title").text == "Made from the page", 15, "the new workflow's page")
    new_id = d.execute_script("return decodeURIComponent(location.hash.split('/')[2])")
    go(d, "/")
    wait(lambda: maybe(d, "delete-" + new_id), 10, "the new workflow's row")
    by(d, "delete-" + new_id).click()
    wait(lambda: maybe(d, "delete-confirm"), 5, "Delete to ask first")
    shot(d, "12-delete-confirm")
    by(d, "confirm-cancel").click()
    check(maybe(d, "row-" + new_id) is not None, "Cancel keeps the workflow")


def t_phone(d):
    """390×844 with touch: the list, a card, and a mask drawn with a finger."""
    fid = instance_id("phone")
    go(d, "/")
    wait(lambda: maybe(d, "row-" + fid), 10, "the list on a phone")
    wide = d.execute_script("return document.documentElement.scrollWidth")
    check(wide <= 391, f"the list is {wide}px wide on a 390px screen")
    shot(d, "08-phone-list")
    by(d, "open-row-" + fid).click()
    wait(lambda: card_state(d, "mask1") == "awaitingUser", 15, "the phone instance's mask question")
    check(d.execute_script("return document.documentElement.scrollWidth") <= 391, "the detail page is wider than the phone")
    shot(d, "09-phone-detail")
    by(d, "card-head-mask1").click()
    wait(lambda: d.execute_script("const e = document.querySelector('.mask-editor'); return e && e.dataset.ready") == "1", 10, "the mask editor on a phone")
    canvas = by(d, "mask-canvas")
    r = d.execute_script("const b = arguments[0].getBoundingClientRect(); return [b.left, b.top, b.width, b.height]", canvas)
    pt = lambda fx, fy: {"x": r[0] + fx * r[2], "y": r[1] + fy * r[3], "id": 1}
    d.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [pt(0.3, 0.5)]})
    for i in range(1, 11):
        d.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [pt(0.3 + 0.04 * i, 0.5)]})
    d.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    shot(d, "10-phone-mask")
    by(d, "editor-submit").click()
    wait(lambda: state("phone", "mask1") == "succeeded", 15, "the finger-drawn mask to be taken")
    mask = os.path.join(a.root, "phone/nodes/mask1/out/mask.png")
    size, painted = png_size_and_pixel(mask, 0.5, 0.5)
    check(size == photo_size(), f"the phone's mask is {size}, the photo {photo_size()}")
    check(painted > 200, f"the finger's stroke is not in the mask ({painted})")


def t_empty_mask(d):
    """An empty mask is warned of, and the person may go on."""
    eid = instance_id("empty")
    go(d, f"/w/{eid}")
    wait(lambda: card_state(d, "mask1") == "awaitingUser", 15, "the empty-mask instance's question")
    by(d, "card-head-mask1").click()
    wait(lambda: d.execute_script("const e = document.querySelector('.mask-editor'); return e && e.dataset.ready") == "1", 10, "the mask editor")
    by(d, "editor-submit").click()
    wait(lambda: maybe(d, "empty-mask-confirm") is not None, 5, "the empty-mask warning")
    check(state("empty", "mask1") == "awaitingUser", "an empty mask was sent before the warning was answered")
    by(d, "confirm-ok").click()
    wait(lambda: state("empty", "mask1") == "succeeded", 15, "the empty mask to be taken once confirmed")


desktop_checks = [("token", t_token), ("many_loads", t_many_loads), ("filter_search", t_filter_search), ("seed", t_seed), ("action_center", t_action_center),
                  ("params", t_params), ("cancel", t_cancel), ("shell_drop", t_shell_drop), ("empty_mask", t_empty_mask),
                  ("keyboard_and_names", t_keyboard_and_names), ("new_and_delete", t_new_and_delete)]
only = set(filter(None, a.only.split(",")))
d = browser()
try:
    for name, fn in desktop_checks:
        if only and name not in only:
            continue
        started = time.time()
        try:
            fn(d)
        except Exception as e:
            check(False, f"{name}: {e}")
            traceback.print_exc()
            shot(d, "failed-" + name)
        for err in console_errors(d):
            check(False, f"{name}: console error: {err}")
        print(f"{name}: {time.time() - started:.1f}s", flush=True)
finally:
    d.quit()
if not only or "phone" in only:
    p = browser(phone=True)
    try:
        t_phone(p)
    except Exception as e:
        check(False, f"phone: {e}")
        traceback.print_exc()
        shot(p, "failed-phone")
    finally:
        p.quit()
print(f"{len(failures)} failures", flush=True)
sys.exit(min(len(failures), 100))
