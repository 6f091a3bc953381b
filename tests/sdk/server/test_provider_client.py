"""ProviderSandbox's `server` client (async and sync) against a real server on loopback:
a Target with header routing sends every call to the server's URL, as the daemon's port
proxy would forward it."""
from __future__ import annotations

import sys

import pytest
from agent_sandbox import (
    InvalidArgumentException,
    NotFoundException,
    ProviderSandbox,
    SandboxException,
    UnsupportedException,
)
from agent_sandbox import sync as agent_sync
from agent_sandbox._async_transport import AsyncTransport
from agent_sandbox._config import ConnectionConfig
from agent_sandbox._ops import Target
from agent_sandbox.sync._transport import Transport

pytestmark = pytest.mark.offline


def _target(server) -> Target:
    return Target(ConnectionConfig("local", server.url, "test-key", None, 30.0), "sbx-test")


@pytest.fixture
def async_sandbox(server) -> ProviderSandbox:
    target = _target(server)
    return ProviderSandbox(AsyncTransport(target.config), target)


@pytest.fixture
def sync_sandbox(server) -> agent_sync.ProviderSandbox:
    target = _target(server)
    return agent_sync.ProviderSandbox(Transport(target.config), target)


async def test_async_commands_and_capabilities(async_sandbox):
    server = async_sandbox.server
    assert await server.call("hello", name="x") == {"message": "Hello, x!"}
    assert "hello" in (await server.capabilities())["commands"]
    assert {c["name"] for c in await server.commands()} >= {"hello", "add"}
    assert (await server.describe())["name"] == "agent-sandbox-server"
    await server.wait_ready(5)
    with pytest.raises(InvalidArgumentException, match="name: expected string"):
        await server.call("hello", name=1)
    with pytest.raises(NotFoundException, match="no command 'nope'"):
        await server.call("nope")
    with pytest.raises(SandboxException, match="ValueError: kaput"):
        await server.call("fail")


async def test_async_files_process_and_groups(async_sandbox, tmp_path, monkeypatch):
    server = async_sandbox.server
    path = str(tmp_path / "f.txt")
    assert await server.files.write(path, "text") == 4
    assert await server.files.read(path) == "text"
    await server.files.write(path, b"\x00\xff")
    assert await server.files.read_bytes(path) == b"\x00\xff"
    assert (await server.files.stat(path))["size"] == 2
    await server.files.mkdir(str(tmp_path / "d"))
    await server.files.move(path, str(tmp_path / "d" / "g"))
    assert [e["name"] for e in await server.files.list(str(tmp_path / "d"))] == ["g"]
    await server.files.delete(str(tmp_path / "d"), recursive=True)
    with pytest.raises(NotFoundException):
        await server.files.stat(str(tmp_path / "d"))
    seen = []
    result = await server.process.run("echo a; echo b >&2; exit 4", on_stdout=seen.append)
    assert (result.exit_code, result.stdout, result.stderr) == (4, "a\n", "b\n")
    assert seen == ["a\n"]
    assert (await server.system.info())["cpu"]["count"] >= 1
    assert "git" in await server.dev_tools.tools()
    assert [t["name"] for t in await server.agents.tools()]
    monkeypatch.setitem(sys.modules, "playwright", None)
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    with pytest.raises(UnsupportedException, match="Playwright is not installed"):
        await server.browser.screenshot()


async def test_async_terminal(async_sandbox):
    async with async_sandbox.server.terminal(cmd="/bin/sh") as term:
        await term.send("echo $((40 + 2)); exit 3\n")
        output = b"".join([chunk async for chunk in term.output()])
    assert b"42" in output and term.exit_code == 3


def test_sync_client(sync_sandbox, tmp_path):
    server = sync_sandbox.server
    assert server.call("add", a=1, b=2) == 3
    with pytest.raises(InvalidArgumentException, match="b: required"):
        server.call("add", a=1)
    server.files.write(str(tmp_path / "s"), "sync")
    assert server.files.read(str(tmp_path / "s")) == "sync"
    result = server.process.run(["sh", "-c", "echo sync"])
    assert result.exit_code == 0 and result.stdout == "sync\n"
    with server.terminal(cmd="/bin/sh") as term:
        term.send("echo hi-$((1+1)); exit 0\n")
        output = b"".join(term.output())
    assert b"hi-2" in output and term.exit_code == 0
