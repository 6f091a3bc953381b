"""Issue 31, loose end: MCP's `sandbox_create(allow_internet_access=false)` really cuts the
sandbox off, as an agent driving the daemon's /mcp sees it: a command in that sandbox cannot
fetch the world's web server (which never sees the request) nor resolve its name, while a
sandbox the same session creates with the default reaches it."""
from __future__ import annotations

import asyncio
import secrets

import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from netcheck import CURL
from world import WWW

from mcp import ClientSession

pytestmark = pytest.mark.net


async def call(session: ClientSession, name: str, **arguments) -> dict:
    result = await session.call_tool(name, arguments)
    assert not result.isError, f"{name} failed: {result.content}"
    return result.structuredContent


async def fetch_from(session: ClientSession, allow_internet_access: bool) -> tuple[str, dict]:
    sandbox = await call(session, "sandbox_create", template="host", timeout=120,
                         allow_internet_access=allow_internet_access)
    token = secrets.token_hex(6)
    by_address = await call(session, "run_command", sandbox_id=sandbox["sandbox_id"],
                            command=f"{CURL} -o /dev/null -w '%{{http_code}}' "
                                    f"'http://{WWW}/control?probe={token}'")
    by_name = await call(session, "run_command", sandbox_id=sandbox["sandbox_id"],
                         command="getent hosts www.example.test")
    await call(session, "sandbox_kill", sandbox_id=sandbox["sandbox_id"])
    return token, {"address": by_address, "name": by_name}


def test_mcp_sandbox_without_internet_is_cut_off(net_world, net_daemon):
    async def scenario():
        timeout = httpx.Timeout(30, read=120)
        async with (
            httpx.AsyncClient(headers={"X-API-KEY": net_daemon.api_key},
                              timeout=timeout) as client,
            streamable_http_client(net_daemon.url + "/mcp", http_client=client) as (
                read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return (await fetch_from(session, False), await fetch_from(session, True))

    (cut_token, cut), (open_token, opened) = asyncio.run(scenario())
    seen = [r["path"] for r in net_world.requests()]
    assert opened["address"]["stdout"] == "200", opened  # the control: MCP sandboxes do reach it
    assert any(f"probe={open_token}" in p for p in seen)
    assert opened["name"]["stdout"].split()[:1] == [WWW], opened
    assert cut["address"]["exit_code"] != 0 and cut["address"]["stdout"] != "200", cut
    assert not any(f"probe={cut_token}" in p for p in seen), "the cut-off sandbox reached the world"
    assert cut["name"]["exit_code"] != 0 and WWW not in cut["name"]["stdout"], cut
