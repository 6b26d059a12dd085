"""What the browser scripts share: Debian's chromium through chromedriver, waiting, checks, finding
elements by their test hooks (data-testid, listed in Sources/FlowdirPages/Pages/README.md), screenshots."""
import os, time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

failures = []


def check(cond, what):
    """Records `what` as a failure unless `cond`; prints it at once."""
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)
    return cond


def wait(cond, timeout=15, what="condition", poll=0.02):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            last = cond()
            if last:
                return last
        except Exception as e:  # a stale element while the page re-renders
            last = e
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def browser(phone=False, downloads=None, performance_log=False):
    o = Options()
    o.binary_location = "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]:
        o.add_argument(arg)
    if phone:
        o.add_experimental_option("mobileEmulation", {
            "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 3.0, "touch": True},
            "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"})
    if downloads:
        o.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
    # The performance log holds the DevTools network events (requests and their headers).
    o.set_capability("goog:loggingPrefs", dict({"browser": "ALL"}, **({"performance": "ALL"} if performance_log else {})))
    d = webdriver.Chrome(options=o, service=Service("/usr/bin/chromedriver"))
    d.set_script_timeout(20)
    return d


def instance_id(root, name):
    for line in open(os.path.join(root, name, "instance.yaml")):
        if line.startswith("id:"):
            return line.split(":", 1)[1].strip().strip('"')


def node_state(root, name, node):
    try:
        for line in open(os.path.join(root, name, "nodes", node, "state.yaml")):
            if line.startswith("state:"):
                return line.split(":", 1)[1].strip()
    except FileNotFoundError:
        return None


def axe_check(d, where, context=None):
    """Runs axe-core (Deque's accessibility checker, from the axe-core-python package) on what the
    page shows now; records each serious or critical violation as a failure. Returns the violations."""
    from axe_core_python.selenium import Axe
    # With a modal dialog open the rest of the page is inert (showModal): the dialog is what is there.
    if context is None and d.execute_script("return !!document.querySelector('dialog[open]')"):
        context = "dialog[open]"
    result = Axe().run(d, context=context)
    bad = [v for v in result.get("violations", []) if v.get("impact") in ("serious", "critical")]
    for v in bad:
        targets = ", ".join(" ".join(n.get("target", [])) for n in v.get("nodes", [])[:4])
        check(False, f"axe, {where}: {v['id']} ({v['impact']}): {v.get('help')} — {targets}")
    return bad


def by(d, tid):
    """The element whose data-testid is `tid` (an error when there is none)."""
    return d.find_element(By.CSS_SELECTOR, f'[data-testid="{tid}"]')


def maybe(d, tid):
    """The element whose data-testid is `tid`, or None."""
    found = d.find_elements(By.CSS_SELECTOR, f'[data-testid="{tid}"]')
    return found[0] if found else None


def rev(d):
    """How many times the page has rendered its data (body[data-rev])."""
    return int(d.execute_script("return Number(document.body.dataset.rev || 0)"))


def screenshot(d, folder, name):
    """A screenshot of the screen into `folder`, which axe-core then checks (not one of a failure)."""
    d.save_screenshot(os.path.join(folder, name + ".png"))
    if not name.startswith("failed-"):
        axe_check(d, name)
