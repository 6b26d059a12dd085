#!/usr/bin/env python3
"""A remote step confirmed from the page (docs/serve.md, "Editors"), in a real browser.

BrowserTests.swift makes the seed workflow with a `confirm_params` await on its `run.http` stylize
step, answers its photo and mask, and serves it beside a job server. This checks that the confirm
editor shows the params the job will get (steps 30), that Approve with steps edited to 12 makes the
card run and then the workflow finish, without a reload. (BrowserTests then checks that the job
server was sent steps 12.) Prints `FAIL: …` for each failure; exit status = failures.

usage: browser_confirm.py --url URL --root ROOT --artifacts DIR
"""
import argparse, os, sys, traceback

from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_common import axe_check, browser, by, check, failures, instance_id, wait

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--root", required=True)
ap.add_argument("--artifacts", required=True)
a = ap.parse_args()
os.makedirs(a.artifacts, exist_ok=True)
SEED = instance_id(a.root, "seed")


def state(d, node):
    found = d.find_elements(By.CSS_SELECTOR, f'[data-testid="card-{node}"]')
    return found[0].get_attribute("data-state") if found else None


d = browser()
try:
    d.get(a.url.split("?")[0].rstrip("/") + "/?" + a.url.split("?", 1)[1] + f"#/w/{SEED}")
    wait(lambda: d.execute_script("return document.body.dataset.ready") == "1", what="the page")
    wait(lambda: state(d, "stylize1") == "awaitingUser", 30, "stylize1 asking to confirm its params")
    d.execute_script("window.__noReload = 1")
    by(d, "card-head-stylize1").click()
    editor = wait(lambda: d.execute_script("const e = document.querySelector('[data-testid=editor]'); return e && e.open ? e : null"),
                  10, "the confirm editor")
    check(editor.get_attribute("data-type") == "confirm_params", f"the editor is {editor.get_attribute('data-type')!r}")
    steps = by(d, "confirm-param-steps")
    check(steps.get_attribute("value") == "30", f"the job's steps as offered: {steps.get_attribute('value')!r}")
    check(by(d, "confirm-param-style").get_attribute("value") == "sketch", "the job's style as offered")
    steps.clear()
    steps.send_keys("12")
    d.save_screenshot(os.path.join(a.artifacts, "confirm-remote.png"))
    axe_check(d, "confirm-remote")
    by(d, "editor-submit").click()
    seen = set()

    def finished():
        seen.add(state(d, "stylize1"))
        return state(d, "compress1") == "succeeded"
    wait(finished, 90, "the stylize job sent, then compress1 done")
    check(seen & {"queuedRemote", "runningRemote", "downloading", "succeeded"}, f"stylize1 was seen running remotely or done: {seen}")
    check(state(d, "stylize1") == "succeeded", f"stylize1: {state(d, 'stylize1')}")
    check(d.execute_script("return window.__noReload") == 1, "the page was reloaded")
    d.save_screenshot(os.path.join(a.artifacts, "confirm-remote-done.png"))
    axe_check(d, "confirm-remote-done")
except Exception:
    check(False, traceback.format_exc())
finally:
    d.quit()
print(f"{len(failures)} failures", flush=True)
sys.exit(len(failures))
