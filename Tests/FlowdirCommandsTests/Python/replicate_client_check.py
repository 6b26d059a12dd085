"""The job server's API through the official `replicate` Python client:
create (by model and by version), get, list, cancel, wait. Exits non-zero
on the first mismatch. usage: replicate_client_check.py BASE_URL TOKEN"""
import hashlib, sys, time

import replicate

base, token = sys.argv[1], sys.argv[2]
client = replicate.Client(api_token=token, base_url=base)

# By model: POST /v1/models/tools/Work/predictions
p = client.models.predictions.create(model="tools/Work", input={"text": "by model", "sleep": 0})
assert p.id and p.status in ("starting", "processing", "succeeded"), p
p.wait()
assert p.status == "succeeded", (p.status, p.error)
assert p.output.startswith(base + "/v1/files/"), p.output
assert "working on by model" in (p.logs or ""), p.logs

# By version: POST /v1/predictions with the model's version id
version = hashlib.sha256(b"tools/Work").hexdigest()
q = client.predictions.create(version=version, input={"text": "by version", "sleep": 30})
got = client.predictions.get(q.id)
assert got.id == q.id and got.status in ("starting", "processing"), got
assert got.input == {"text": "by version", "sleep": 30}, got.input

# Cancel
client.predictions.cancel(q.id)
for _ in range(100):
    got = client.predictions.get(q.id)
    if got.status == "canceled":
        break
    time.sleep(0.05)
assert got.status == "canceled", got.status

# List: newest first
page = client.predictions.list()
ids = [x.id for x in page.results]
assert ids[:2] == [q.id, p.id], ids

# A wrong token is refused as Replicate refuses it
try:
    replicate.Client(api_token="wrong", base_url=base).predictions.get(p.id)
    raise AssertionError("a wrong token was accepted")
except replicate.exceptions.ReplicateError as e:
    assert e.status == 401, e

print("replicate client: ok")
