"""A giftless authenticator for tests: HTTP Basic with the user and
password in FLOWDIR_TEST_LFS_USER / FLOWDIR_TEST_LFS_PASSWORD, read-write;
anything else gets no identity (401)."""
import base64
import os

from giftless.auth.identity import DefaultIdentity, Permission


def basic(request):
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except Exception:
        return None
    if user != os.environ["FLOWDIR_TEST_LFS_USER"] or password != os.environ["FLOWDIR_TEST_LFS_PASSWORD"]:
        return None
    identity = DefaultIdentity(name=user, id=user)
    identity.allow(permissions=Permission.all())
    return identity
