"""Each capability group of the server over real HTTP on loopback (no sandbox)."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys

import pytest
from agent_sandbox.server.groups import browser
from running_server import Running

pytestmark = pytest.mark.offline


def ndjson(response):
    return [json.loads(line) for line in response.text.splitlines() if line]


# ---------------------------------------------------------------- file_ops

def test_files_write_read_stat_list_move_delete(http, tmp_path):
    path = str(tmp_path / "sub" / "a.txt")
    r = http.post("/files/write", json={"path": path, "content": "héllo\n"})
    assert r.json() == {"path": path, "bytes_written": 7}
    http.post("/files/write", json={"path": path, "content": "more", "append": True})
    assert http.get("/files/read", params={"path": path}).json()["content"] == "héllo\nmore"
    assert http.get("/files/stat", params={"path": path}).json()["type"] == "file"
    blob = bytes(range(256))
    http.post("/files/write", json={"path": str(tmp_path / "b.bin"), "encoding": "base64",
                                    "content": base64.b64encode(blob).decode()})
    r = http.get("/files/read", params={"path": str(tmp_path / "b.bin"), "encoding": "base64"})
    assert base64.b64decode(r.json()["content"]) == blob
    r = http.get("/files/read", params={"path": str(tmp_path / "b.bin")})
    assert r.status_code == 400 and r.json()["field"] == "encoding"
    http.post("/files/mkdir", json={"path": str(tmp_path / "d1" / "d2")})
    names = [e["path"] for e in http.get("/files/list", params={
        "path": str(tmp_path), "depth": 3}).json()["entries"]]
    assert str(tmp_path / "d1" / "d2") in names and path in names
    r = http.post("/files/move", json={"source": path, "destination": str(tmp_path / "b.bin")})
    assert r.status_code == 409 and r.json()["field"] == "destination"
    http.post("/files/move", json={"source": path, "destination": str(tmp_path / "c.txt")})
    assert (tmp_path / "c.txt").read_text() == "héllo\nmore"
    r = http.post("/files/delete", json={"path": str(tmp_path / "d1")})
    assert r.status_code == 400 and r.json()["field"] == "recursive"
    assert http.post("/files/delete", json={"path": str(tmp_path / "d1"),
                                            "recursive": True}).json()["deleted"]
    assert not (tmp_path / "d1").exists()


@pytest.mark.parametrize("path, words", [("", "empty path"), ("a\0b", "NUL"),
                                         ("/" + "x" * 5000, "limit is 4096")])
def test_files_nonsense_paths_are_400(http, path, words):
    r = http.get("/files/stat", params={"path": path})
    assert r.status_code == 400 and r.json()["field"] == "path" and words in r.json()["message"]


def test_files_missing_and_refused(http, tmp_path):
    r = http.get("/files/read", params={"path": str(tmp_path / "none")})
    assert r.status_code == 404 and "no such file" in r.json()["message"]
    r = http.post("/files/mkdir", json={"path": str(tmp_path), "parents": False})
    assert r.status_code == 409
    r = http.post("/files/delete", json={"path": "/"})
    assert r.status_code == 400
    r = http.post("/files/write", json={"path": str(tmp_path / "x")})
    assert r.status_code == 400 and r.json()["field"] == "content"


# ---------------------------------------------------------------- process

def test_process_run_streams_output_and_exit_code(http):
    with http.stream("POST", "/process/run", json={
            "cmd": "echo out; echo err >&2; read x; echo got $x; exit 3", "stdin": "in\n"}) as r:
        assert r.headers["content-type"] == "application/x-ndjson"
        r.read()
    messages = ndjson(r)
    assert messages[0]["type"] == "start" and messages[-1] == {"type": "exit", "exit_code": 3}
    out = "".join(m["data"] for m in messages if m["type"] == "stdout")
    err = "".join(m["data"] for m in messages if m["type"] == "stderr")
    assert out == "out\ngot in\n" and err == "err\n"


def test_process_run_argv_cwd_env_and_timeout(http, tmp_path):
    messages = ndjson(http.post("/process/run", json={
        "cmd": ["sh", "-c", "pwd; echo $FOO"], "cwd": str(tmp_path), "env": {"FOO": "bar"}}))
    assert "".join(m.get("data", "") for m in messages) == f"{tmp_path}\nbar\n"
    messages = ndjson(http.post("/process/run", json={"cmd": "sleep 30", "timeout": 0.5}))
    assert {"type": "timeout", "seconds": 0.5} in messages
    assert messages[-1]["type"] == "exit" and messages[-1]["exit_code"] == -9


@pytest.mark.parametrize("body, field", [
    ({"cmd": ""}, "cmd"), ({"cmd": []}, "cmd"), ({"cmd": ["/no/such/prog"]}, "cmd"),
    ({"cmd": "true", "cwd": "/no/such/dir"}, "cwd"), ({"cmd": "true", "env": {"A": 1}}, "env"),
    ({"cmd": "true", "timeout": -1}, "timeout"), ({"cmd": 5}, "cmd"), ({}, "cmd"),
])
def test_process_bad_input(http, body, field):
    r = http.post("/process/run", json=body)
    assert r.status_code == 400 and r.json()["field"] == field


def test_process_start_list_kill(http):
    pid = http.post("/process/start", json={"cmd": ["sleep", "60"]}).json()["pid"]
    try:
        listed = http.get("/process/list").json()["processes"]
        mine = next(p for p in listed if p["pid"] == pid)
        assert mine["cmdline"] == ["sleep", "60"] and mine["started_by_server"]
        assert http.post("/process/kill", json={"pid": pid, "signal": "KILL"}).status_code == 200
    finally:
        subprocess.run(["kill", "-9", str(pid)], check=False, capture_output=True)
    r = http.post("/process/kill", json={"pid": 1})
    assert r.status_code == 400 and r.json()["field"] == "pid"
    r = http.post("/process/kill", json={"pid": 12345, "signal": "BOOM"})
    assert r.status_code == 400 and r.json()["field"] == "signal"


# ---------------------------------------------------------------- terminal

def test_terminal_pty_over_websocket(server):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    url = server.url.replace("http://", "ws://") + "/terminal?cmd=/bin/sh&cols=100&rows=30"
    output, exit_events = b"", []
    with connect(url) as ws:
        ws.send(json.dumps({"type": "resize", "cols": 120, "rows": 40}))
        ws.send(b"stty size; tty; exit 5\n")
        try:
            while True:
                message = ws.recv(timeout=30)
                if isinstance(message, bytes):
                    output += message
                else:
                    exit_events.append(json.loads(message))
        except ConnectionClosed:  # the server closes after the exit message
            pass
    text = output.decode(errors="replace")
    assert "40 120" in text and "/dev/pts/" in text
    assert exit_events == [{"type": "exit", "exit_code": 5}]
    assert server.http.get("/health").status_code == 200


def test_terminal_without_upgrade_is_400(http):
    r = http.get("/terminal")
    assert r.status_code == 400 and "WebSocket" in r.json()["message"]
    r = http.get("/terminal", params={"cols": 0}, headers={"Upgrade": "websocket"})
    assert r.status_code == 400 and r.json()["field"] == "cols"


# ---------------------------------------------------------------- system

def test_system_info(http, tmp_path):
    info = http.get("/system/info", params={"path": str(tmp_path)}).json()
    assert info["os"]["system"] == "Linux" and info["cpu"]["count"] >= 1
    assert info["memory"]["total"] > 0 and info["disk"]["total"] >= info["disk"]["free"] > 0
    assert http.get("/system/info", params={"path": "/no/such"}).status_code == 404


# ---------------------------------------------------------------- dev_tools

@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_dev_tools_git(http, tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "one")
    (tmp_path / "f.py").write_text("x = 1\n")
    status = http.get("/dev/git/status", params={"path": str(tmp_path)}).json()
    assert status["branch"] == "main" and status["files"] == [{"status": "??", "path": "f.py"}]
    git("add", "f.py")
    diff = http.get("/dev/git/diff", params={"path": str(tmp_path), "staged": True}).json()
    assert "+x = 1" in diff["diff"]
    log = http.get("/dev/git/log", params={"path": str(tmp_path)}).json()["commits"]
    assert [c["subject"] for c in log] == ["one"]
    r = http.get("/dev/git/status", params={"path": "/"})
    assert r.status_code == 400 and r.json()["field"] == "path"


def test_dev_tools_search_and_tools(http, tmp_path):
    (tmp_path / "a.py").write_text("def Hello():\n    return 1\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x").write_text("Hello\n")
    found = http.post("/dev/search", json={"pattern": "hello", "path": str(tmp_path),
                                           "case_sensitive": False}).json()
    assert found == {"matches": [{"path": str(tmp_path / "a.py"), "line": 1,
                                  "text": "def Hello():"}], "truncated": False}
    r = http.post("/dev/search", json={"pattern": "(", "regex": True, "path": str(tmp_path)})
    assert r.status_code == 400 and r.json()["field"] == "pattern"
    tools = http.get("/dev/tools").json()["tools"]
    assert tools["python3"] and "gopls" in tools


# ---------------------------------------------------------------- browser

def test_browser_is_503_without_playwright(http, monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright", None)  # import fails
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    r = http.post("/browser/navigate", json={"url": "about:blank"})
    assert r.status_code == 503 and "Playwright is not installed" in r.json()["message"]
    assert "\n" not in r.json()["message"]
    assert http.get("/browser/screenshot").status_code == 503


def test_browser_is_503_without_a_browser(http, monkeypatch):
    monkeypatch.setattr(browser, "unavailable_reason", lambda: "no Chromium found (install it)")
    r = http.post("/browser/click", json={"selector": "#a"})
    assert r.status_code == 503 and r.json()["message"] == "no Chromium found (install it)"


def test_browser_bad_input(http):
    r = http.post("/browser/navigate", json={"url": "javascript:alert(1)"})
    assert r.status_code in (400, 503)
    r = http.post("/browser/type", json={"selector": "#a"})
    assert r.status_code == 400 and r.json()["field"] == "text"


def _browser_missing() -> str | None:
    try:
        __import__("playwright.sync_api")
    except ImportError:
        return "Playwright is not installed here"
    if browser.executable() is None:
        return "no Chromium installed here (Debian's chromium)"
    return None


@pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))
def test_browser_drives_chromium(http):
    page = "data:text/html,<input id=q><button id=b onclick=\"document.title='clicked'\">b</button>"
    assert http.post("/browser/navigate", json={"url": page}).status_code == 200
    assert http.post("/browser/type", json={"selector": "#q", "text": "hi"}).status_code == 200
    assert http.post("/browser/click", json={"selector": "#b"}).status_code == 200
    r = http.post("/browser/evaluate", json={"expression": "document.querySelector('#q').value"})
    assert r.json()["result"] == "hi"
    assert http.get("/browser/content").json()["title"] == "clicked"
    png = base64.b64decode(http.get("/browser/screenshot").json()["data"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))
def test_browser_that_cannot_start_is_503_and_stop_closes_it(monkeypatch):
    monkeypatch.setattr(browser, "executable", lambda: "/bin/false")
    broken = Running("browser")
    try:
        r = broken.http.post("/browser/navigate", json={"url": "about:blank"})
        assert r.status_code == 503, r.text
        assert r.json()["message"].startswith("the browser did not start: ")
        assert "\n" not in r.json()["message"]
    finally:
        broken.stop()
    monkeypatch.undo()
    working = Running("browser")
    try:
        assert working.http.post("/browser/navigate", json={"url": "about:blank"}).status_code == 200
        worker = working.server.app.state["browser"].thread
    finally:
        working.stop()
    assert not worker.is_alive() and "browser" not in working.server.app.state


# ---------------------------------------------------------------- agents

def test_agents_tool_manifest(http):
    tools = {t["name"]: t for t in http.get("/agents/tools").json()["tools"]}
    assert tools["add"]["description"] == "Adds two numbers"
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]


def test_agents_mcp_over_http(http):
    def rpc(method, params=None):
        return http.post("/agents/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method,
                                              "params": params or {}}).json()

    init = rpc("initialize", {"protocolVersion": "2025-03-26"})
    assert init["result"]["serverInfo"]["name"] == "agent-sandbox-server"
    assert "hello" in [t["name"] for t in rpc("tools/list")["result"]["tools"]]
    called = rpc("tools/call", {"name": "hello", "arguments": {"name": "mcp"}})["result"]
    assert called["structuredContent"] == {"result": {"message": "Hello, mcp!"}}
    assert not called["isError"]
    failed = rpc("tools/call", {"name": "fail", "arguments": {}})["result"]
    assert failed["isError"] and "kaput" in failed["content"][0]["text"]
    assert rpc("tools/call", {"name": "hello", "arguments": {"name": 1}})["error"]["code"] == -32602
    assert rpc("nope")["error"]["code"] == -32601
    assert http.post("/agents/mcp", json={"id": 1}).json()["error"]["code"] == -32600


def test_no_child_left_behind():
    # the module's commands started processes; every one of them was reaped or killed
    children = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(os.getpid())],
                              check=False, capture_output=True, text=True).stdout.split("\n")
    assert not [c for c in children if "sleep" in c]
