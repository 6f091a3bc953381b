"""Bad requests to a sandbox's envd and code interpreter get a 4xx that says
what is wrong, never a 500 (each case here was a 500 found by fuzzing)."""
from __future__ import annotations

import json

import httpx
import pytest

ENVD_PORT = 49983
INTERPRETER_PORT = 49999


@pytest.fixture(scope="module")
def sandbox(daemon):
    with daemon.api() as api:
        r = api.post("/sandboxes", json={"templateID": "base"})
        assert r.status_code == 201, r.text
        sb = r.json()
        yield sb
        api.delete(f"/sandboxes/{sb['sandboxID']}")


def plane(daemon, sb: dict, port: int) -> httpx.Client:
    """A client for one port of the sandbox, reached through the daemon."""
    headers = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": str(port)}
    if sb.get("envdAccessToken"):
        headers["X-Access-Token"] = sb["envdAccessToken"]
    return httpx.Client(base_url=daemon.url, headers=headers, timeout=30)


def assert_refused(r: httpx.Response, *words: str) -> None:
    """A client error whose message names what was wrong."""
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert r.text.strip(), "the refusal must say why"
    for word in words:
        assert word in r.text, (word, r.text)


def test_removing_a_context_without_an_id_is_a_client_error(daemon, sandbox):
    with plane(daemon, sandbox, INTERPRETER_PORT) as interp:
        assert_refused(interp.delete("/contexts"))
        assert_refused(interp.delete("/contexts/"))
        assert interp.delete("/contexts/no-such-context").status_code == 404


@pytest.mark.parametrize("cwd, why", [
    ("relative/dir", "absolute"),
    ("/no/such/dir", "/no/such/dir"),
    ("/etc/hostname", "not a directory"),
    (42, "must be a string"),
    (["/tmp"], "must be a string"),
])
def test_creating_a_context_with_a_bad_cwd_is_refused(daemon, sandbox, cwd, why):
    with plane(daemon, sandbox, INTERPRETER_PORT) as interp:
        r = interp.post("/contexts", json={"language": "bash", "cwd": cwd})
        assert r.status_code == 400, r.text
        assert "cwd" in r.text and why in r.text, r.text


def test_an_interpreter_body_that_is_not_an_object_is_refused(daemon, sandbox):
    with plane(daemon, sandbox, INTERPRETER_PORT) as interp:
        assert_refused(interp.post("/execute", content=b"[1, 2]"), "JSON object")
        assert_refused(interp.post("/execute", json={"code": 7}), "code")


def test_an_upload_whose_name_is_too_long_is_refused(daemon, sandbox):
    name = "/home/user/" + "a" * 5000
    with plane(daemon, sandbox, ENVD_PORT) as envd:
        r = envd.post("/files", files={"file": (name, b"data")})
        assert r.status_code == 400, r.text
        assert "too long" in r.json()["message"], r.text
        raw = envd.post("/files", params={"path": name}, content=b"data",
                        headers={"Content-Type": "application/octet-stream"})
        assert raw.status_code == 400, raw.text
        # The sandbox's files still work afterwards.
        ok = envd.post("/files", files={"file": ("/home/user/short.txt", b"data")})
        assert ok.status_code == 200, ok.text
        assert envd.get("/files", params={"path": "/home/user/short.txt"}).content == b"data"


def test_a_download_without_a_path_names_the_field(daemon, sandbox):
    with plane(daemon, sandbox, ENVD_PORT) as envd:
        r = envd.get("/files")
        assert r.status_code == 400, r.text
        assert "path" in r.json()["message"]


def connect_call(envd: httpx.Client, rpc: str, message: dict) -> httpx.Response:
    return envd.post(f"/{rpc}", content=json.dumps(message).encode(),
                     headers={"Content-Type": "application/json",
                              "Connect-Protocol-Version": "1"})


@pytest.mark.parametrize("rpc, message, field", [
    ("process.Process/SendSignal", {"process": {"pid": 1}, "signal": "SIGNAL_SIGSTOP"}, "signal"),
    ("process.Process/SendSignal", {"process": {"pid": 2 ** 40}, "signal": "SIGNAL_SIGKILL"},
     "process.pid"),
    ("process.Process/Update",
     {"process": {"pid": 1}, "pty": {"size": {"cols": 70000, "rows": 24}}}, "pty.size.cols"),
    ("process.Process/Start", {"process": {"cmd": "ls", "args": "-l"}}, "process.args"),
    ("filesystem.Filesystem/ListDir", {"path": "/", "depth": 2 ** 31}, "depth"),
    ("filesystem.Filesystem/Move", {"source": "/tmp"}, "destination"),
    ("filesystem.Filesystem/Stat", {"path": 3}, "path"),
    ("filesystem.Filesystem/GetWatcherEvents", {}, "watcherId"),
])
def test_connect_calls_with_bad_fields_get_invalid_argument(daemon, sandbox, rpc, message, field):
    with plane(daemon, sandbox, ENVD_PORT) as envd:
        r = connect_call(envd, rpc, message)
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["code"] == "invalid_argument"
        assert field in body["message"], body
