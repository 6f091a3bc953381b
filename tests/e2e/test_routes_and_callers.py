"""The route table as a client meets it (405 with Allow, 404, 401 before any handler), the
caller's team recorded on every sandbox it creates, and /mcp sessions that call the daemon at
its own address whatever Host header the request carried."""
from __future__ import annotations

import sqlite3
import subprocess

import httpx
import pytest

from harness import ABX_BIN, start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # the `host` template needs no build


@pytest.fixture
def own_daemon(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    yield d
    stop_daemon(d)


def test_wrong_method_is_405_with_allow_and_unknown_path_is_404(own_daemon):
    with own_daemon.api() as api:
        r = api.put("/sandboxes/abc")
        assert r.status_code == 405
        assert r.headers["allow"] == "GET, DELETE"
        assert "use GET, DELETE" in r.json()["message"]
        r = api.get("/no/such/route")
        assert r.status_code == 404 and r.json()["code"] == 404
        r = api.get("/mcp")  # MCP clients probe for a server stream with GET
        assert r.status_code == 405 and "POST" in r.headers["allow"]


def test_routes_need_their_credential_before_any_handler_runs(own_daemon):
    with httpx.Client(base_url=own_daemon.url, timeout=30) as anon:
        assert anon.get("/health").status_code == 204
        # Which paths exist is told only to callers with a key.
        assert anon.get("/no/such/route").status_code == 401
        assert anon.put("/health").status_code == 401
        for method, path in [("GET", "/sandboxes"), ("POST", "/sandboxes"),
                             ("DELETE", "/sandboxes/abc"), ("GET", "/abx/v1/templates"),
                             ("DELETE", "/abx/v1/templates/host")]:
            r = anon.request(method, path, headers={"X-API-KEY": "e2b_" + "0" * 40})
            assert r.status_code == 401, (method, path, r.text)
            assert "Invalid API key" in r.json()["message"]
    with own_daemon.api() as api:
        assert api.get("/abx/v1/templates/host").status_code == 200, "host must still exist"


def test_every_sandbox_records_the_team_of_the_key_that_made_it(own_daemon):
    made = subprocess.run([str(ABX_BIN), "keys", "create", "--name", "second"],
                          env=own_daemon.env(), capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    second_key = next(w for w in made.stdout.split() if w.startswith("e2b_"))
    ids = []
    for key in (own_daemon.api_key, second_key):
        r = httpx.post(own_daemon.url + "/sandboxes", json={"templateID": "host"},
                       headers={"X-API-KEY": key}, timeout=60)
        assert r.status_code == 201, r.text
        ids.append(r.json()["sandboxID"])
    with sqlite3.connect(own_daemon.data_dir / "abx.db") as db:
        owners = dict(db.execute("SELECT id, owner FROM sandboxes").fetchall())
    assert owners == {ids[0]: "default", ids[1]: "default"}
    log = (own_daemon.data_dir / "daemon.log").read_text()
    assert log.count("for team default") >= 2


def test_mcp_session_calls_the_daemon_it_runs_in_not_the_host_header(own_daemon):
    accept = {"Accept": "application/json, text/event-stream",
              "X-API-KEY": own_daemon.api_key, "Host": "127.0.0.2:9"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    with httpx.Client(base_url=own_daemon.url, timeout=60) as client:
        r = client.post("/mcp", json=init, headers=accept)
        assert r.status_code == 200, r.text
        session = {**accept, "Mcp-Session-Id": r.headers["Mcp-Session-Id"]}
        client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers=session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "sandbox_list", "arguments": {}}}
        result = client.post("/mcp", json=call, headers=session).json()["result"]
        assert not result.get("isError"), result
        assert client.delete("/mcp", headers=session).status_code == 200
