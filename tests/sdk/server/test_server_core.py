"""The server's table, core group, commands and bad input, over real HTTP on loopback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agent_sandbox.server import GROUPS, command, schema
from agent_sandbox.server.app import parse_groups
from agent_sandbox.server.commands import REGISTRY
from agent_sandbox.server.endpoints import ENDPOINTS
from running_server import Running

pytestmark = pytest.mark.offline
ROOT = Path(__file__).resolve().parents[3]


def test_every_endpoint_is_a_row_of_a_known_group():
    assert {e.group for e in ENDPOINTS} == set(GROUPS)
    seen = set()
    for e in ENDPOINTS:
        assert e.method in ("GET", "POST") and e.path.startswith("/") and e.description
        assert e.schema["type"] == "object" and callable(e.handler)
        assert (e.method, e.path) not in seen
        seen.add((e.method, e.path))


def test_root_describes_groups_endpoints_and_commands(http):
    body = http.get("/").json()
    assert set(body["groups"]) == set(GROUPS) and all(g["enabled"] for g in body["groups"].values())
    paths = {(e["method"], e["path"]) for e in body["endpoints"]}
    assert ("POST", "/commands/{name}") in paths and ("GET", "/terminal") in paths
    hello = next(c for c in body["commands"] if c["name"] == "hello")
    assert hello["description"] == "Greets someone"
    assert hello["schema"]["properties"] == {"name": {"type": "string", "default": "world"},
                                             "times": {"type": "integer", "default": 1}}
    assert hello["schema"]["required"] == []


def test_core_health_info_capabilities(http):
    assert http.get("/health").json() == {"status": "ok"}
    info = http.get("/info").json()
    assert info["name"] == "agent-sandbox-server" and info["groups"][0] == "core"
    caps = http.get("/capabilities").json()
    assert caps["disabled"] == [] and "hello" in caps["commands"]


def test_command_call_with_defaults_and_arguments(http):
    assert http.post("/commands/hello", json={}).json() == {"result": {"message": "Hello, world!"}}
    r = http.post("/commands/hello", json={"name": "x", "times": 2})
    assert r.json()["result"]["message"] == "Hello, x!Hello, x!"
    assert http.post("/commands/add", json={"a": 1, "b": 2.5}).json() == {"result": 3.5}


@pytest.mark.parametrize("body, field, words", [
    ({"name": 3}, "name", "expected string, got integer"),
    ({"times": True}, "times", "expected integer, got boolean"),
    ({"nme": "x"}, "nme", "unknown argument"),
])
def test_bad_command_arguments_are_400_naming_the_field(http, body, field, words):
    r = http.post("/commands/hello", json=body)
    assert r.status_code == 400
    assert r.json()["field"] == field and words in r.json()["message"]


def test_missing_required_argument(http):
    r = http.post("/commands/add", json={"a": 1})
    assert r.status_code == 400 and r.json()["field"] == "b"
    assert "required" in r.json()["message"]


def test_body_that_is_not_a_json_object(http):
    r = http.post("/commands/hello", content=b"{nope")
    assert r.status_code == 400 and r.json()["field"] == "body"
    r = http.post("/commands/hello", json=[1, 2])
    assert r.status_code == 400 and "JSON object" in r.json()["message"]


def test_handler_exception_is_500_and_the_server_keeps_serving(http):
    r = http.post("/commands/fail", json={"reason": "disk on fire"})
    assert r.status_code == 500 and r.json()["message"] == "ValueError: disk on fire"
    r = http.post("/commands/not_json", json={})
    assert r.status_code == 500 and "JSON cannot carry" in r.json()["message"]
    assert http.get("/health").json() == {"status": "ok"}


def test_unknown_command_path_and_method(http):
    r = http.post("/commands/nope", json={})
    assert r.status_code == 404 and "hello" in r.json()["message"]
    assert http.get("/no/such/thing").status_code == 404
    r = http.get("/commands/hello")
    assert r.status_code == 405 and "POST" in r.json()["message"]


def test_query_arguments_are_converted_and_checked(http):
    r = http.get("/files/list", params={"path": "/", "depth": "x"})
    assert r.status_code == 400 and r.json()["field"] == "depth"
    r = http.get("/browser/screenshot", params={"full_page": "maybe"})
    assert r.status_code == 400 and r.json()["field"] == "full_page"


def test_disabled_group_is_404_saying_how_to_enable_it():
    running = Running(["commands"])
    try:
        r = running.http.get("/files/stat", params={"path": "/"})
        assert r.status_code == 404
        assert "'file_ops' group is not enabled" in r.json()["message"]
        assert "ABX_SERVER_GROUPS" in r.json()["message"]
        assert running.http.get("/capabilities").json()["groups"] == ["core", "commands"]
        paths = {e["path"] for e in running.http.get("/").json()["endpoints"]}
        assert "/files/stat" not in paths and "/commands/{name}" in paths
    finally:
        running.stop()


def test_groups_from_argument_and_environment(monkeypatch):
    assert parse_groups("process, system") == ["core", "process", "system"]
    monkeypatch.setenv("ABX_SERVER_GROUPS", "terminal")
    assert parse_groups(None) == ["core", "terminal"]
    monkeypatch.delenv("ABX_SERVER_GROUPS")
    assert parse_groups(None) == list(GROUPS)
    with pytest.raises(ValueError, match="unknown capability group 'files'"):
        parse_groups(["files"])


def test_schema_from_signature():
    def f(a: int, b: str | None = None, c: list[int] = [], d=1.5) -> None:  # noqa: B006
        pass

    s = schema.from_signature(f)
    assert s["required"] == ["a"]
    assert s["properties"]["b"] == {"type": ["string", "null"], "default": None}
    assert s["properties"]["c"] == {"type": "array", "items": {"type": "integer"}, "default": []}
    assert s["properties"]["d"] == {"default": 1.5}
    with pytest.raises(TypeError, match="named JSON arguments"):
        schema.from_signature(lambda *args: None)


def test_command_decorator_registers_in_the_process_registry():
    @command(description="Says hi")
    def hi_for_test(name: str = "x") -> dict:
        return {"hi": name}

    try:
        assert REGISTRY["hi_for_test"].description == "Says hi"
        assert hi_for_test("y") == {"hi": "y"}  # still the plain function
    finally:
        del REGISTRY["hi_for_test"]
    with pytest.raises(ValueError, match="command name"):
        command(name="has space")(lambda: None)


def test_module_entry_point_serves_a_commands_file(tmp_path):
    (tmp_path / "commands.py").write_text(
        "from agent_sandbox.server import command, start\n"
        "@command(description='Greets')\n"
        "def hello(name: str = 'world') -> dict:\n"
        "    return {'message': 'Hello, ' + name}\n"
        "start(9000)\n")  # does not serve while the entry point loads the file
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "agent_sandbox.server", "--port", str(port),
                             "--host", "127.0.0.1", "--groups", "commands",
                             "--commands", str(tmp_path / "commands.py")],
                            stderr=subprocess.PIPE, text=True)
    try:
        import httpx
        for _ in range(200):
            try:
                r = httpx.post(f"http://127.0.0.1:{port}/commands/hello", json={"name": "cli"})
                break
            except httpx.ConnectError:
                if proc.poll() is not None:
                    pytest.fail(proc.stderr.read())
                import time
                time.sleep(0.05)
        assert r.json() == {"result": {"message": "Hello, cli"}}
        assert httpx.get(f"http://127.0.0.1:{port}/capabilities").json()["groups"] == [
            "core", "commands"]
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()


def test_module_entry_point_refuses_an_unknown_group():
    done = subprocess.run([sys.executable, "-m", "agent_sandbox.server", "--groups", "nope"],
                          check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "unknown capability group 'nope'" in done.stderr


def test_server_and_client_versions_agree():
    import re

    from agent_sandbox import __version__ as client_version
    from agent_sandbox.server import __version__ as server_version

    assert server_version == client_version
    pyproject = (ROOT / "sdk/python/pyproject.toml").read_text()
    assert re.search(r'"agent-sandbox-server==([^"]+)"', pyproject).group(1) == client_version


def test_chunked_request_body_and_body_limit(http):
    def chunks():
        yield b'{"name": '
        yield b'"chunked"}'

    r = http.post("/commands/hello", content=chunks())  # no length: httpx sends it chunked
    assert r.json() == {"result": {"message": "Hello, chunked!"}}
    import socket
    from urllib.parse import urlparse

    port = urlparse(str(http.base_url)).port
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.sendall(b"POST /commands/hello HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Length: 999999999999\r\n\r\n{}")
        assert raw.recv(100).startswith(b"HTTP/1.1 413")
    assert http.get("/health").status_code == 200
