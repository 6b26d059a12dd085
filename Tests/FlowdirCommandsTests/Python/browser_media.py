#!/usr/bin/env python3
"""A video output played and seeked in a real browser (Debian's chromium).

BrowserTests.swift makes an instance whose step wrote a minute of H.264 in
MP4 (~50 MB, by ffmpeg) and starts `flowdir serve`; this checks that the
output's tile shows the video's first frame, opens it from its card, and
checks, from Chromium's own network log, that the media was fetched with
`Range` and answered `206` with `Content-Range` and `video/mp4`, that the
player knows the whole minute is seekable and lands where a seek sends it,
and that the server's memory stayed flat meanwhile; and that a video whose
content is not on this machine (its file is the pointer) is said to be so
on its tile. Prints `FAIL: …` for each failure; exit status = failures.

usage: browser_media.py --url URL --root ROOT --artifacts DIR --serve-pid PID
"""
import argparse, re, json, os, sys, traceback, urllib.parse

from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import axe_check, browser, check, failures, instance_id, wait

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--root", required=True)
ap.add_argument("--artifacts", required=True)
ap.add_argument("--serve-pid", type=int, required=True)
a = ap.parse_args()
os.makedirs(a.artifacts, exist_ok=True)
parsed = urllib.parse.urlparse(a.url)
BASE = f"{parsed.scheme}://{parsed.netloc}"
TOKEN = urllib.parse.parse_qs(parsed.query)["token"][0]


def media_exchanges(d):
    """Requests for files of instances in Chromium's network log: (url, request headers, status, response headers)."""
    urls, headers, answers = {}, {}, {}
    lower = lambda h: {k.lower(): v for k, v in (h or {}).items()}
    for entry in d.get_log("performance"):
        m = json.loads(entry["message"])["message"]
        p = m.get("params", {})
        rid = p.get("requestId")
        if m["method"] == "Network.requestWillBeSent" and "/files/" in p["request"]["url"]:
            urls[rid] = p["request"]["url"]
            headers.setdefault(rid, {}).update(lower(p["request"].get("headers")))
        elif m["method"] == "Network.requestWillBeSentExtraInfo":
            # The headers as sent (Range included, for media), which the event above may lack.
            headers.setdefault(rid, {}).update(lower(p.get("headers")))
        elif m["method"] == "Network.responseReceived" and "/files/" in p["response"]["url"]:
            answers[rid] = (p["response"]["status"], lower(p["response"].get("headers")))
    return [(url, headers.get(rid, {})) + answers.get(rid, (None, {})) for rid, url in urls.items()]


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


def t_video_seeks(d):
    before = rss_mb(a.serve_pid)
    iid = instance_id(a.root, "clip")
    d.get(f"{BASE}/?token={TOKEN}#/w/{iid}")
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", 20, "the page's first render")
    wait(lambda: d.find_elements(By.CSS_SELECTOR, '[data-testid="card-head-clip"]'), 15, "the clip's card").__getitem__(0).click()
    tile = wait(lambda: d.find_elements(By.CSS_SELECTOR, '[data-testid="output-clip-clip"]'), 10, "the clip's output tile")[0]
    # The tile shows the video's first frame (a PNG thumbnail ffmpeg made), no larger than 320 px.
    thumb = tile.find_elements(By.TAG_NAME, "img")
    check(len(thumb) == 1, "the video's tile has a thumbnail")
    if thumb:
        size = wait(lambda: d.execute_script("const i = arguments[0]; return i.complete && i.naturalWidth ? [i.naturalWidth, i.naturalHeight] : null",
                                             thumb[0]), 30, "the video's thumbnail")
        check(0 < max(size) <= 320, f"the thumbnail is {size}")
    tile.click()
    video = wait(lambda: d.find_elements(By.CSS_SELECTOR, '[data-testid="viewer-media"]'), 10, "the player in the viewer")[0]
    check(video.tag_name == "video", f"the viewer shows a {video.tag_name}, not a video")
    wait(lambda: d.execute_script("return arguments[0].readyState >= 1 || arguments[0].error", video), 20, "the video's metadata")
    error = d.execute_script("const e = arguments[0].error; return e && (e.code + ' ' + e.message)", video)
    check(not error, f"the video did not load: {error}")
    duration = d.execute_script("return arguments[0].duration", video)
    check(isinstance(duration, (int, float)) and 59 <= duration <= 61, f"the video's duration is {duration}, not a minute")
    # Seekable to the end: Chromium allows that only when the server answers ranges.
    end = d.execute_script("const s = arguments[0].seekable; return s.length ? s.end(s.length - 1) : 0", video)
    check(end >= 59, f"only {end}s of the video are seekable")
    landed = d.execute_async_script("""
        const v = arguments[0], done = arguments[1], t = setTimeout(() => done('no seeked event in 20 s'), 20000);
        v.addEventListener('seeked', () => { clearTimeout(t); done(v.currentTime); }, { once: true });
        v.currentTime = 55;""", video)
    check(isinstance(landed, (int, float)) and abs(landed - 55) < 1, f"a seek to 55 s landed at {landed}")
    d.save_screenshot(os.path.join(a.artifacts, "video-viewer.png"))
    axe_check(d, "video-viewer")

    # Streamed, never read whole: the server's memory stays flat while a 50 MB video plays and seeks.
    grew = rss_mb(a.serve_pid) - before
    check(grew < 20, f"the server's memory grew {grew:.1f} MB while it served the video")
    print(f"server memory: {before:.1f} MB before, grew {grew:.1f} MB", flush=True)
    exchanges = [x for x in media_exchanges(d) if x[0].endswith("/clip.mp4")]
    # A request Chromium gave up before its answer (a seek elsewhere meanwhile) has no status: not counted.
    ranged = [x for x in exchanges if "range" in x[1] and x[2] is not None]
    check(ranged, f"Chromium asked for the video without Range: {[(u, h.get('range'), s) for u, h, s, _ in exchanges]}")
    for url, headers, status, rheaders in ranged:
        check(status == 206, f"{headers['range']} was answered {status}, not 206")
        check(rheaders.get("content-range", "").startswith("bytes "), f"{headers['range']}: Content-Range {rheaders.get('content-range')!r}")
        check(rheaders.get("accept-ranges") == "bytes", f"{headers['range']}: Accept-Ranges {rheaders.get('accept-ranges')!r}")
        check(rheaders.get("x-content-type-options") == "nosniff", f"{headers['range']}: no nosniff")
        check(rheaders.get("content-type") == "video/mp4", f"{headers['range']}: Content-Type {rheaders.get('content-type')!r}")
    later = [h["range"] for _, h, _, _ in ranged if not h["range"].startswith("bytes=0-")]
    # Whether the seek needed a request of its own depends on how much Chromium had read ahead.
    print(f"video requests: {[(h.get('range'), s) for _, h, s, _ in exchanges]}; from past the start: {later}", flush=True)


def t_not_on_this_machine(d):
    """`gone`'s video is its pointer: the tile says so and how to get it, and offers no viewer."""
    iid = instance_id(a.root, "gone")
    d.get(f"{BASE}/?token={TOKEN}#/w/{iid}")
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", 20, "the page's first render")
    wait(lambda: d.find_elements(By.CSS_SELECTOR, '[data-testid="card-head-clip"]'), 15, "the clip's card")[0].click()
    tile = wait(lambda: d.find_elements(By.CSS_SELECTOR, '[data-testid="output-clip-clip"]'), 10, "the clip's output tile")[0]
    check(tile.get_attribute("data-absent") == "1", "the tile of a video not on this machine is not marked so")
    check(re.search(r"not on this machine \((4[5-9]|5[0-5])\.\d MB\)", tile.text), f"the tile says {tile.text!r}")
    check("flowdir storage get" in tile.text and "gone/clip" in tile.text, f"the tile does not say how to get it: {tile.text!r}")
    check(tile.tag_name != "button" and not tile.find_elements(By.CSS_SELECTOR, "img, video"), "the tile offers to view what is not here")
    d.save_screenshot(os.path.join(a.artifacts, "video-not-here.png"))
    axe_check(d, "video-not-here")


d = browser(performance_log=True)
try:
    for name, fn in [("video", t_video_seeks), ("not_here", t_not_on_this_machine)]:
        try:
            fn(d)
        except Exception as e:
            check(False, f"{name}: {e}")
            traceback.print_exc()
            d.save_screenshot(os.path.join(a.artifacts, f"failed-{name}.png"))
finally:
    d.quit()
print(f"{len(failures)} failures", flush=True)
sys.exit(min(len(failures), 100))
