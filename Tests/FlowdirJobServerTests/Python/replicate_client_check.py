"""The job server's API through Replicate's own Python client (PyPI
`replicate`, 1.0.x): create by model and by version, get, list and page,
cancel, wait, run, files, and a webhook the client's own `validate`
believes. Exits non-zero at the first mismatch.

usage: replicate_client_check.py BASE TOKEN
BASE is the server without /v1 (http://127.0.0.1:PORT): the client puts
/v1/... on every path itself."""
import hashlib
import http.server
import io
import sys
import threading
import time
import urllib.error
import urllib.request

import replicate
from replicate.exceptions import ReplicateError
from replicate.webhook import InvalidSignatureError

base, token = sys.argv[1], sys.argv[2]
client = replicate.Client(api_token=token, base_url=base)


def check(ok, what):
    if not ok:
        print(f"replicate client: MISMATCH: {what}", flush=True)
        sys.exit(1)


# Somewhere for the webhook to go.
received = []


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        received.append((dict(self.headers), body.decode()))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


hooks = http.server.HTTPServer(("127.0.0.1", 0), Hook)
threading.Thread(target=hooks.serve_forever, daemon=True).start()
hook_url = f"http://127.0.0.1:{hooks.server_address[1]}/hook"

# By model: POST /v1/models/tools/Work/predictions
p = client.models.predictions.create(model="tools/Work", input={"text": "by model", "sleep": 0},
                                     webhook=hook_url, webhook_events_filter=["completed"])
check(p.id and p.status in ("starting", "processing", "succeeded"), f"created: {p}")
p.wait()
check(p.status == "succeeded", f"by model: {p.status} {p.error}")
check(p.output.startswith(base + "/v1/files/"), f"output {p.output}")
check("working on by model" in (p.logs or ""), f"logs {p.logs!r}")
check(p.metrics and p.metrics.get("predict_time") is not None, f"metrics {p.metrics}")

# Its webhook, signed as Replicate signs: the client's own validate believes it.
for _ in range(200):
    if received:
        break
    time.sleep(0.02)
check(len(received) == 1, f"webhooks received: {len(received)}")
headers, body = received[0]
secret = client.webhooks.default.secret()
client.webhooks.validate(headers=headers, body=body, secret=secret, tolerance=300)
try:
    client.webhooks.validate(headers=headers, body=body.replace("succeeded", "failed"), secret=secret, tolerance=300)
    check(False, "a tampered webhook was believed")
except InvalidSignatureError:
    pass

# By version: POST /v1/predictions with the model's version id
version = hashlib.sha256(b"tools/Work").hexdigest()
q = client.predictions.create(version=version, input={"text": "by version", "sleep": 30})
got = client.predictions.get(q.id)
check(got.id == q.id and got.status in ("starting", "processing"), f"get: {got.status}")
check(got.input == {"text": "by version", "sleep": 30}, f"input {got.input}")
check(got.version == version, f"version {got.version}")

# Cancel
client.predictions.cancel(q.id)
for _ in range(200):
    got = client.predictions.get(q.id)
    if got.status == "canceled":
        break
    time.sleep(0.02)
check(got.status == "canceled", f"after cancel: {got.status}")

# Files: uploaded, read back, and given as an input (the client uploads an open file itself).
f = client.files.create(io.BytesIO(b"some words"), filename="words.txt", content_type="text/plain")
check(f.size == 10 and f.name == "words.txt" and f.content_type == "text/plain", f"file {f}")
check(any(x["id"] == f.id for x in client._request("GET", "/v1/files").json()["results"]), "files list")
r = client.models.predictions.create(model="tools/Pair", input={"src": io.BytesIO(b"abc")})
r.wait()
check(r.status == "succeeded", f"pair: {r.status} {r.error}")
check(set(r.output) == {"upper", "size"}, f"pair output {r.output}")

# run: create, wait, output. The client wraps only https: URLs as files it
# reads; a plain-http server's output stays its URL, fetched here with the
# token (the job server serves no file without it).
out = client.run("tools/Work", input={"text": "ran"})
url = getattr(out, "url", None) or str(out)
check(url.startswith(base + "/v1/files/"), f"run output {out!r}")
data = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})).read()
check(data == b"ran", f"run output {out!r}: {data!r}")
try:
    urllib.request.urlopen(url)
    check(False, "an output was served without the token")
except urllib.error.HTTPError as e:
    check(e.code == 401, f"output without the token: {e.code}")

# List: newest first, paged with next
page = client.predictions.list()
ids = [x.id for x in page.results]
check(ids[:4] == [ids[0], r.id, q.id, p.id] and len(ids) == 4, f"list {ids}")
check(page.next is None, f"next {page.next}")

# Refusals as Replicate's: a wrong token, an unknown prediction
try:
    replicate.Client(api_token="wrong", base_url=base).predictions.get(p.id)
    check(False, "a wrong token was accepted")
except ReplicateError as e:
    check(e.status == 401 and e.title == "Unauthenticated", f"wrong token: {e}")
try:
    client.predictions.get("nosuchprediction")
    check(False, "an unknown prediction was found")
except ReplicateError as e:
    check(e.status == 404 and e.detail, f"unknown: {e}")

# run with a wait shorter than the job (`Prefer: wait=3`, held 2 s): the held create is
# answered `starting` after it, as Replicate answers, so the client polls on
# to the end rather than taking the unfinished prediction's output for it.
out = client.run("tools/Work", input={"text": "longer", "sleep": 4}, wait=3)
url = getattr(out, "url", None) or str(out)
data = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})).read()
check(data == b"longer", f"run past its wait {out!r}: {data!r}")

print("replicate client: ok", flush=True)
