"""The files API reads as the requested user, never hands out the kernel's /proc or /sys
files, and tells an expired signed URL apart from a wrong one."""
from __future__ import annotations

import base64
import hashlib
import time

import httpx
import pytest

from harness import start_daemon, stop_daemon
from helpers import abx

pytestmark = pytest.mark.offline  # the `host` template needs no build


@pytest.fixture
def secure(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    with d.api() as api:
        r = api.post("/sandboxes", json={"templateID": "host", "secure": True})
        assert r.status_code == 201, r.text
        sandbox = r.json()
    yield d, sandbox
    stop_daemon(d)


def as_root(d, sandbox, script: str) -> None:
    r = abx(d, "exec", "--user", "root", sandbox["sandboxID"], "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr


def download(d, sandbox, path: str, username: str) -> httpx.Response:
    headers = {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983",
               "X-Access-Token": sandbox["envdAccessToken"]}
    return httpx.get(d.url + "/files", params={"path": path, "username": username},
                     headers=headers, timeout=30)


def test_user_cannot_read_a_root_only_file_root_can(secure):
    d, sandbox = secure
    as_root(d, sandbox, "echo 'root secret' > /tmp/secret && chmod 600 /tmp/secret")
    refused = download(d, sandbox, "/tmp/secret", "user")
    assert refused.status_code == 403, refused.text
    assert "permission denied" in refused.json()["message"]
    allowed = download(d, sandbox, "/tmp/secret", "root")
    assert allowed.status_code == 200 and allowed.text == "root secret\n"


@pytest.mark.parametrize("target", ["/proc/kallsyms", "/proc/kmsg", "/proc/self/environ"])
def test_a_planted_link_to_proc_is_refused(secure, target):
    d, sandbox = secure
    r = abx(d, "exec", sandbox["sandboxID"], "--", "ln", "-sf", target, "/tmp/link")
    assert r.returncode == 0, r.stderr
    for user in ("user", "root"):
        refused = download(d, sandbox, "/tmp/link", user)
        assert refused.status_code == 403, refused.text
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204


def upload(d, sandbox, path: str, username: str, data: bytes) -> httpx.Response:
    headers = {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983",
               "X-Access-Token": sandbox["envdAccessToken"]}
    return httpx.post(d.url + "/files", params={"path": path, "username": username},
                      files={"file": ("f", data)}, headers=headers, timeout=30)


def test_an_upload_through_a_planted_link_to_proc_is_refused(secure):
    """Written as the daemon, /proc/1/comm would rename the sandbox's init: proof that a
    write reached a kernel file (as /proc/mtrr would reach kernel code)."""
    d, sandbox = secure
    as_root(d, sandbox, "ln -sf /proc/1/comm /tmp/result.txt && ln -sf /dev/null /tmp/null")
    before = abx(d, "exec", sandbox["sandboxID"], "--", "cat", "/proc/1/comm").stdout
    for user in ("user", "root"):
        refused = upload(d, sandbox, "/tmp/result.txt", user, b"pwned")
        assert refused.status_code in (400, 403), refused.text
    assert "/proc or /sys" in refused.json()["message"]
    device = upload(d, sandbox, "/tmp/null", "root", b"x")
    assert device.status_code == 400 and "regular files" in device.json()["message"]
    after = abx(d, "exec", sandbox["sandboxID"], "--", "cat", "/proc/1/comm").stdout
    assert after == before and "pwned" not in after
    assert d.proc.poll() is None and httpx.get(d.url + "/health", timeout=10).status_code == 204


def test_devices_and_directories_are_not_downloaded(secure):
    d, sandbox = secure
    device = download(d, sandbox, "/dev/zero", "root")
    assert device.status_code == 400 and "regular files" in device.json()["message"]
    directory = download(d, sandbox, "/tmp", "root")
    assert directory.status_code == 400, directory.text


def sign(path: str, user: str, token: str, expiration: int) -> str:
    text = f"{path}:read:{user}:{token}:{expiration}"
    digest = hashlib.sha256(text.encode()).digest()
    return "v1_" + base64.b64encode(digest).decode().rstrip("=")


def test_an_expired_signed_url_says_signature_expired(secure):
    d, sandbox = secure
    as_root(d, sandbox, "echo hi > /tmp/shared && chmod 644 /tmp/shared")
    expired = int(time.time()) - 60
    params = {"path": "/tmp/shared", "username": "user", "signature_expiration": str(expired),
              "signature": sign("/tmp/shared", "user", sandbox["envdAccessToken"], expired)}
    headers = {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983"}
    r = httpx.get(d.url + "/files", params=params, headers=headers, timeout=30)
    assert r.status_code == 401
    assert r.json()["message"] == "signature is already expired"  # envd's words


def test_a_signed_url_still_valid_reads_as_its_user(secure):
    d, sandbox = secure
    as_root(d, sandbox, "echo hi > /tmp/secret2 && chmod 600 /tmp/secret2")
    later = int(time.time()) + 600
    params = {"path": "/tmp/secret2", "username": "user", "signature_expiration": str(later),
              "signature": sign("/tmp/secret2", "user", sandbox["envdAccessToken"], later)}
    headers = {"E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983"}
    r = httpx.get(d.url + "/files", params=params, headers=headers, timeout=30)
    assert r.status_code == 403, "a link signed for `user` read a root-only file"
