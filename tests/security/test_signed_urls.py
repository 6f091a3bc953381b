"""A signed /files URL of a secure sandbox covers its path and username only: an
Authorization header cannot make it act as root, and a multipart body cannot write files
beside the signed one."""
from __future__ import annotations

import base64
import hashlib

import httpx
import pytest

from harness import start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # the `host` template needs no build


def sign(path: str, operation: str, user: str, token: str) -> str:
    digest = hashlib.sha256(f"{path}:{operation}:{user}:{token}".encode()).digest()
    return "v1_" + base64.b64encode(digest).decode().rstrip("=")


@pytest.fixture
def secure(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", "secure": True})
        assert r.status_code == 201, r.text
        sandbox = r.json()
    yield d, sandbox
    stop_daemon(d)


def envd(d, sandbox, **headers) -> dict[str, str]:
    return {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983", **headers}


def test_authorization_header_cannot_make_a_signed_upload_root(secure):
    d, sandbox = secure
    path = "signed-rel.txt"  # relative: resolved in the acting user's home
    query = {"path": path, "signature": sign(path, "write", "", sandbox["envdAccessToken"])}
    as_root = envd(d, sandbox, Authorization="Basic " + base64.b64encode(b"root:").decode())
    httpx.post(d.url + "/files", params=query, content=b"x", timeout=30,
               headers={**as_root, "Content-Type": "application/octet-stream"})
    token = envd(d, sandbox, **{"X-Access-Token": sandbox["envdAccessToken"]})
    in_root_home = httpx.get(d.url + "/files",  # as root: `user` may not look into /root
                             params={"path": "/root/signed-rel.txt", "username": "root"},
                             headers=token, timeout=30)
    assert in_root_home.status_code == 404, "the unsigned Authorization header chose root"


def test_a_signed_upload_writes_only_its_path(secure):
    d, sandbox = secure
    path = "/tmp/signed.txt"
    query = {"path": path, "signature": sign(path, "write", "", sandbox["envdAccessToken"])}
    files = [("file", ("signed.txt", b"one")), ("file", ("/tmp/beside.txt", b"two"))]
    r = httpx.post(d.url + "/files", params=query, files=files, headers=envd(d, sandbox),
                   timeout=30)
    assert r.status_code == 400 and "signed" in r.json()["message"], r.text
    token = envd(d, sandbox, **{"X-Access-Token": sandbox["envdAccessToken"]})
    beside = httpx.get(d.url + "/files", params={"path": "/tmp/beside.txt"}, headers=token,
                       timeout=30)
    assert beside.status_code == 404
    one = [("file", ("signed.txt", b"one"))]
    r = httpx.post(d.url + "/files", params=query, files=one, headers=envd(d, sandbox),
                   timeout=30)
    assert r.status_code == 200, r.text
    got = httpx.get(d.url + "/files", params={"path": path}, headers=token, timeout=30)
    assert got.text == "one"
