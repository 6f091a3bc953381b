"""The SDK client itself: a killed or closed Sandbox object, command deadlines, disconnect,
metrics, exported names, shared HTTP clients, and following a restarted daemon."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import agent_sandbox
import agent_sandbox.sync
import pytest
from agent_sandbox import (
    CommandExitException,
    NotFoundException,
    Sandbox,
    SandboxClosedException,
    SandboxException,
    SandboxNotFoundException,
    TimeoutException,
)
from harness import start_daemon, stop_daemon

# The `host` template needs no build.
pytestmark = pytest.mark.offline
HOST = "host"


def daemon_alive(daemon) -> None:
    assert daemon.proc.poll() is None
    with daemon.api() as api:
        assert api.get("/health").status_code < 300


async def test_calls_after_kill_raise_sandbox_errors_and_kill_again_is_false(daemon, conn):
    sandbox = await Sandbox.create(template=HOST, **conn)
    assert await sandbox.kill() is True
    with pytest.raises(SandboxNotFoundException, match="killed"):
        await sandbox.commands.run("true")
    with pytest.raises(SandboxException):
        await sandbox.files.read("/etc/hostname")
    with pytest.raises(SandboxNotFoundException):
        await sandbox.get_info()
    assert await sandbox.kill() is False
    daemon_alive(daemon)


async def test_calls_after_close_raise_and_the_sandbox_lives_on(daemon, conn):
    sandbox = await Sandbox.create(template=HOST, **conn)
    await sandbox.close()
    with pytest.raises(SandboxClosedException, match="connect"):
        await sandbox.commands.run("true")
    again = await Sandbox.connect(sandbox.sandbox_id, **conn)
    assert (await again.commands.run("echo alive")).stdout == "alive\n"
    assert await again.kill() is True


def test_sync_calls_after_kill_raise_and_kill_again_is_false(daemon, conn):
    sandbox = agent_sandbox.sync.Sandbox.create(template=HOST, **conn)
    assert sandbox.kill() is True
    with pytest.raises(SandboxNotFoundException):
        sandbox.commands.run("true")
    assert sandbox.kill() is False


async def test_command_past_its_timeout_raises_timeout_exception(daemon, conn):
    async with await Sandbox.create(template=HOST, **conn) as sandbox:
        with pytest.raises(TimeoutException, match="deadline exceeded") as raised:
            await sandbox.commands.run("sleep 5", timeout=1)
        assert not isinstance(raised.value, CommandExitException)
        assert isinstance(raised.value, TimeoutError)  # the builtin catches it too
        handle = await sandbox.commands.run("sleep 5", background=True, timeout=1)
        with pytest.raises(TimeoutException):
            await handle.wait()
        assert (await sandbox.commands.run("echo alive")).stdout == "alive\n"


def test_sync_command_past_its_timeout_raises_timeout_exception(daemon, conn):
    with agent_sandbox.sync.Sandbox.create(template=HOST, **conn) as sandbox, \
            pytest.raises(TimeoutException):
        sandbox.commands.run("sleep 5", timeout=1)


async def test_disconnect_after_output_started(daemon, conn):
    async with await Sandbox.create(template=HOST, **conn) as sandbox:
        started = asyncio.Event()
        handle = await sandbox.commands.run("echo first; exec sleep 30", background=True,
                                            on_stdout=lambda _: started.set())
        await asyncio.wait_for(started.wait(), 30)
        await handle.disconnect()
        assert handle.pid in {p.pid for p in await sandbox.commands.list()}
        with pytest.raises(SandboxException, match="disconnected"):
            await handle.wait()
        assert await sandbox.commands.kill(handle.pid) is True


async def test_get_metrics_with_and_without_a_time_range(daemon, conn):
    async with await Sandbox.create(template=HOST, **conn) as sandbox:
        samples = await sandbox.get_metrics()
        assert samples and samples[-1].cpu_count > 0 and samples[-1].mem_total > 0
        assert samples[-1].timestamp.tzinfo is not None
        now = datetime.now(timezone.utc)
        ranged = await sandbox.get_metrics(start=now - timedelta(minutes=5),
                                           end=now + timedelta(minutes=1))
        assert all(s.mem_total > 0 for s in ranged)
    with agent_sandbox.sync.Sandbox.create(template=HOST, **conn) as sandbox:
        assert sandbox.get_metrics()[-1].cpu_count > 0


def test_exported_names():
    assert agent_sandbox.__version__ == agent_sandbox.sync.__version__
    assert agent_sandbox.__version__.count(".") >= 2
    for module in ("agent_sandbox", "agent_sandbox.sync"):
        names: dict = {}
        exec(f"from {module} import *", names)
        assert "TimeoutError" not in names, "must not shadow the builtin"
        assert names["TimeoutException"] is TimeoutException
        assert names["Template"].build and names["Template"].list
    # The old names stay: aliases of the same classes.
    assert agent_sandbox.NotFoundError is NotFoundException
    assert agent_sandbox.SandboxNotFound is SandboxNotFoundException
    assert agent_sandbox.sync.TemplateBuildError is agent_sandbox.TemplateBuildException
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert agent_sandbox.TimeoutError is TimeoutException
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    with pytest.raises(AttributeError):
        agent_sandbox.NoSuchName  # noqa: B018


def test_sync_template(daemon, conn):
    names = {t.name for t in agent_sandbox.sync.Template.list(**conn)}
    assert HOST in names
    with pytest.raises(NotFoundException):
        agent_sandbox.sync.Template.get("no-such-template", **conn)


ONE_SHOT = """
import asyncio, sys
from agent_sandbox import Sandbox, _clients

async def main():
    first = await Sandbox.create(template="host", api_url=sys.argv[1], api_key=sys.argv[2])
    second = await Sandbox.create(template="host", api_url=sys.argv[1], api_key=sys.argv[2])
    assert first._transport.client is second._transport.client, "one client per loop"
    await first.commands.run("python3 -c pass")
    await first.kill()
    await second.kill()

asyncio.run(main())
# An http:// daemon needs no CA bundle: the verifying TLS context was never built.
print(_clients._verifying_context.cache_info().currsize)
"""


def test_one_shared_client_and_no_tls_context_for_http(daemon):
    env = {**os.environ, "PYTHONPATH": str(Path(agent_sandbox.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", ONE_SHOT, daemon.url, daemon.api_key], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sandbox_object_follows_a_restarted_daemon(state_dir, monkeypatch):
    data = state_dir / "state"
    first = start_daemon(data)
    second = None
    for name in ("ABX_SANDBOX_API_URL", "ABX_SANDBOX_API_KEY", "ABX_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ABX_STATE_DIR", str(data))  # found like `abx` finds it
    monkeypatch.setenv("ABX_CONFIG_DIR", str(state_dir / "config"))
    try:
        sandbox = agent_sandbox.sync.Sandbox.create(template=HOST)
        assert sandbox.commands.run("echo before").stdout == "before\n"
        stop_daemon(first, kill_sandboxes=False)
        # Another port, as when the old one was taken: the address file says where.
        second = start_daemon(data, listen=f"127.0.0.1:{free_port()}")
        assert second.url != first.url
        assert sandbox.commands.run("echo after").stdout == "after\n"
        assert sandbox.get_info().sandbox_id == sandbox.sandbox_id
        # And on the same port (the usual case): pooled connections to the old one are dropped.
        stop_daemon(second, kill_sandboxes=False)
        second = start_daemon(data, listen=second.url.removeprefix("http://"))
        assert sandbox.commands.run("echo again").stdout == "again\n"
        assert sandbox.kill() is True
        daemon_alive(second)
    finally:
        stop_daemon(second or first)
