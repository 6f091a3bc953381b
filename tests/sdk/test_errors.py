"""Bad input gives typed errors that say what to do."""
from __future__ import annotations

import pytest
from agent_sandbox import AuthenticationError, NotFoundError, Sandbox, SandboxException, SandboxNotFound


@pytest.mark.offline
async def test_unknown_sandbox(conn):
    with pytest.raises(SandboxNotFound, match="not found"):
        await Sandbox.connect("inosuchsandbox000000", **conn)


@pytest.mark.offline
async def test_wrong_key(daemon):
    with pytest.raises(AuthenticationError, match="API key"):
        await Sandbox.create(api_url=daemon.url, api_key="e2b_" + "0" * 40)
    with pytest.raises(AuthenticationError):
        await Sandbox.list(api_url=daemon.url, api_key="e2b_" + "0" * 40)


@pytest.mark.offline
async def test_unknown_provider():
    with pytest.raises(ValueError, match="local, e2b, alicloud-express"):
        await Sandbox.create(provider="nowhere")


@pytest.mark.offline
async def test_unknown_template(conn):
    with pytest.raises(SandboxException):
        await Sandbox.create(template="no-such-template", **conn)


async def test_missing_file_and_process(conn):
    async with await Sandbox.create(**conn) as sandbox:
        with pytest.raises(NotFoundError, match="missing.txt"):
            await sandbox.files.read("missing.txt")
        assert await sandbox.commands.kill(999999) is False
        with pytest.raises(NotFoundError):
            await sandbox.commands.send_stdin(999999, "x")


async def test_killed_sandbox_plane_calls_fail_clearly(conn):
    sandbox = await Sandbox.create(**conn)
    other = await Sandbox.connect(sandbox.sandbox_id, **conn)
    await sandbox.kill()
    try:
        assert await other.is_running() is False
        with pytest.raises(SandboxNotFound):
            await other.files.read("x")
    finally:
        await other.close()
