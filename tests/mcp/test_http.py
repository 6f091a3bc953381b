"""The daemon's /mcp (Streamable HTTP) driven by the official MCP Python SDK's HTTP client."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from mcp_helpers import (call_error, check_errors_and_limits, check_full_session,
                         check_tool_schemas, http_session, sandbox_exists)


def test_full_session(daemon):
    async def scenario():
        async with http_session(daemon) as session:
            await check_tool_schemas(session)
            await check_full_session(session)
    asyncio.run(scenario())


def test_one_call_workflow_and_errors(daemon):
    async def scenario():
        async with http_session(daemon) as session:
            sid = await check_errors_and_limits(session)
            assert sandbox_exists(daemon, sid)
        return sid
    sid = asyncio.run(scenario())
    # The SDK's client sends DELETE on exit: the session sandbox goes with it.
    assert not sandbox_exists(daemon, sid), "the session sandbox outlived the session"


def test_host_files_are_not_reachable_over_http(daemon):
    async def scenario():
        async with http_session(daemon) as session:
            message = await call_error(session, "upload", host_path="/etc/passwd",
                                       path="/home/user/x")
            assert "not offered over the daemon's /mcp" in message
            message = await call_error(session, "download", path="/etc/hostname",
                                       host_path="/tmp/x")
            assert "not offered" in message
    asyncio.run(scenario())


@pytest.mark.offline
def test_api_key_and_session_are_required(daemon):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=daemon.url, timeout=30) as client:
        assert client.post("/mcp", json=init, headers=accept).status_code == 401
        bad = client.post("/mcp", json=init, headers={**accept, "X-API-KEY": "e2b_wrong"})
        assert bad.status_code == 401
    with daemon.api() as api:
        r = api.post("/mcp", json=init, headers=accept)
        assert r.status_code == 200
        assert r.json()["result"]["protocolVersion"] == "2025-06-18"
        session_id = r.headers["Mcp-Session-Id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert api.post("/mcp", json=ping, headers=accept).status_code == 400
        assert api.post("/mcp", json=ping, headers={**accept, "Mcp-Session-Id": "nope"}) \
            .status_code == 404
        with_session = {**accept, "Mcp-Session-Id": session_id}
        assert api.post("/mcp", json=ping, headers=with_session).json()["result"] == {}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert api.post("/mcp", json=note, headers=with_session).status_code == 202
        unknown = api.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "nope"},
                           headers=with_session).json()
        assert unknown["error"]["code"] == -32601
        old = api.post("/mcp", json={**init, "params": {**init["params"],
                                                        "protocolVersion": "1999-01-01"}},
                       headers=accept).json()
        assert old["result"]["protocolVersion"] == "2025-11-25"
        assert api.delete("/mcp", headers={"Mcp-Session-Id": session_id}).status_code == 200
        assert api.post("/mcp", json=ping, headers=with_session).status_code == 404
