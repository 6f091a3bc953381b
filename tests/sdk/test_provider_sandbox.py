"""ProviderSandbox end to end: agent-sandbox-server running in a real sandbox (the `host`
template, which needs no build), reached through the daemon's port proxy.

Until templates start the server themselves, the test copies the server package (and
websockets, for the terminal) into the sandbox and starts it as a background command with the
host's /usr/bin/python3, which the `host` template shows."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
import websockets
from agent_sandbox import (
    InvalidArgumentException,
    ProviderSandbox,
    SandboxException,
    UnsupportedException,
    WriteEntry,
)
from agent_sandbox import sync as agent_sync

pytestmark = pytest.mark.offline

ROOT = Path(__file__).resolve().parents[2]
PKG = "/home/user/pkg"
COMMANDS = '''
from agent_sandbox.server import command, start

@command(description="Greets someone")
def hello(name: str = "world") -> dict:
    return {"message": f"Hello, {name}!"}

start(9000)
'''


def _package_files() -> list[WriteEntry]:
    """The server package and websockets, as files under PKG."""
    sources = [(ROOT / "sdk/python-server", ROOT / "sdk/python-server/agent_sandbox/server"),
               (Path(websockets.__file__).parent.parent, Path(websockets.__file__).parent)]
    entries = []
    for base, top in sources:
        for path in sorted(top.rglob("*.py")):
            entries.append(WriteEntry(path=f"{PKG}/{path.relative_to(base)}",
                                      data=path.read_bytes()))
    return entries


async def _start_server(sandbox: ProviderSandbox) -> None:
    await sandbox.files.write(_package_files())
    await sandbox.files.write("/home/user/commands.py", COMMANDS)
    await sandbox.commands.run(
        "exec /usr/bin/python3 -m agent_sandbox.server --commands /home/user/commands.py "
        ">/home/user/server.log 2>&1", background=True, envs={"PYTHONPATH": PKG}, timeout=0)
    try:
        await sandbox.server.wait_ready(60)
    except SandboxException:
        log = await sandbox.commands.run("cat /home/user/server.log", check=False)
        pytest.fail(f"the server did not come up:\n{log.stdout}{log.stderr}")


@pytest.fixture(scope="module")
def running(daemon):
    """One sandbox with the server, shared by this module's tests (its id)."""
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("the host template needs the host's /usr/bin/python3")

    async def create() -> str:
        # The shape: create(template=..., provider=...).
        sandbox = await ProviderSandbox.create(template="host", provider="local",
                                               api_url=daemon.url, api_key=daemon.api_key,
                                               timeout=600)
        await _start_server(sandbox)
        return sandbox.sandbox_id

    sandbox_id = asyncio.run(create())
    yield sandbox_id
    agent_sync.Sandbox.connect(sandbox_id, api_url=daemon.url, api_key=daemon.api_key).kill()


async def test_call_a_command_through_provider_sandbox(running, conn):
    sandbox = await ProviderSandbox.connect(running, **conn)
    assert await sandbox.server.call("hello", name="x") == {"message": "Hello, x!"}
    caps = await sandbox.server.capabilities()
    assert caps["commands"] == ["hello"] and "terminal" in caps["groups"]
    with pytest.raises(InvalidArgumentException, match="name: expected string"):
        await sandbox.server.call("hello", name=5)
    result = await sandbox.server.process.run("id -un; echo $PWD")
    assert result.exit_code == 0 and result.stdout.startswith("user\n")
    await sandbox.server.files.write("/home/user/note.txt", "through the server")
    assert (await sandbox.files.read("/home/user/note.txt")) == "through the server"
    with pytest.raises(UnsupportedException):  # no Playwright in the host's Python
        await sandbox.server.browser.navigate("about:blank")
    facts = await sandbox.server.system.info()
    assert facts["cpu"]["count"] >= 1 and facts["memory"]["total"] > 0
    assert (await sandbox.server.dev_tools.tools())["python3"] == "/usr/bin/python3"


def test_sync_provider_sandbox_and_plain_http_via_get_host(running, daemon):
    sandbox = agent_sync.ProviderSandbox.connect(running, api_url=daemon.url,
                                                 api_key=daemon.api_key)
    assert sandbox.server.call("hello") == {"message": "Hello, world!"}
    # What E2B's get_host(9000) names: Host {port}-{id}.{domain}, no SDK involved.
    host = f"9000-{running}.localhost:{urlparse(daemon.url).port}"
    reply = httpx.post(f"{daemon.url}/commands/hello", json={"name": "http"},
                       headers={"Host": host})
    assert reply.status_code == 200 and reply.json() == {"result": {"message": "Hello, http!"}}
    reply = httpx.post(f"{daemon.url}/commands/hello", json={"name": 1}, headers={"Host": host})
    assert reply.status_code == 400 and reply.json()["field"] == "name"
    assert daemon.proc.poll() is None


async def test_terminal_over_websocket(running, conn, daemon):
    sandbox = await ProviderSandbox.connect(running, **conn)
    async with sandbox.server.terminal(cmd="/bin/sh") as term:
        await term.send("echo $((6*7)); exit 4\n")
        output = b"".join([chunk async for chunk in term.output()])
    assert b"42" in output and term.exit_code == 4


async def test_provider_sandbox_takes_cpu_and_memory_limits(daemon, conn):
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("the host template needs the host's /usr/bin/python3")
    sandbox = await ProviderSandbox.create(template="host", cpu_count=1, memory_mb=256, **conn)
    try:
        info = await sandbox.get_info()
        assert (info.cpu_count, info.memory_mb) == (1, 256)
        inside = await sandbox.commands.run("head -1 /proc/meminfo; nproc")
        assert inside.stdout.split() == ["MemTotal:", str(256 * 1024), "kB", "1"]
        await _start_server(sandbox)
        facts = await sandbox.server.system.info()
        assert facts["memory"]["total"] == 256 << 20 and facts["cpu"]["usable"] == 1
    finally:
        await sandbox.kill()
