"""`sandbox.diff()`: what a sandbox changed on top of its template, through the SDK's public
API (sync and async) against a real daemon, offline `host` template."""
from __future__ import annotations

import asyncio

import pytest

from agent_sandbox import FileChange, Sandbox
from agent_sandbox.sync import Sandbox as SyncSandbox

pytestmark = pytest.mark.offline


def test_diff_lists_added_changed_and_deleted(daemon, monkeypatch):
    monkeypatch.setenv("ABX_SANDBOX_API_URL", daemon.url)
    monkeypatch.setenv("ABX_SANDBOX_API_KEY", daemon.api_key)
    with SyncSandbox.create(template="host") as sandbox:
        sandbox.commands.run("echo hi > /tmp/new.txt && echo x >> /etc/inputrc && "
                             "rm /etc/timezone", user="root")
        changes = sandbox.diff()
        assert not changes.truncated
        by_path = {c.path: c for c in changes.changes}
        assert by_path["/tmp/new.txt"] == FileChange("/tmp/new.txt", "file", "added", 3)
        assert by_path["/etc/inputrc"].change == "changed"
        assert by_path["/etc/timezone"].change == "deleted"

    async def scenario() -> list[str]:
        async with await Sandbox.create(template="host") as sandbox:
            await sandbox.commands.run("touch /tmp/async")
            return [c.path for c in (await sandbox.diff()).changes]
    assert "/tmp/async" in asyncio.run(scenario())
