"""`sandbox.events()` and `sandbox.follow_events()`: a sandbox's flight record through the
SDK's public API (blocking and async classes) against a real daemon, offline `host` template."""
from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone

import pytest
from agent_sandbox import (
    AsyncSandbox,
    InvalidArgumentException,
    SandboxEvent,
    SandboxNotFoundException,
    UnsupportedException,
)
from agent_sandbox.sync import Sandbox as SyncSandbox

pytestmark = pytest.mark.offline


def named(events: list[SandboxEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.event) for e in events]


def test_events_tell_what_happened_in_order_with_fields(conn):
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    with SyncSandbox.create(template="host", **conn) as sandbox:
        sandbox.commands.run("echo hi", envs={"TOKEN": "not-recorded"}, cwd="/tmp")
        sandbox.files.write("/tmp/note.txt", "hello")
        found = sandbox.events()

        assert named(found) == [("lifecycle", "created"), ("commands", "started"),
                                ("commands", "ended"), ("files", "uploaded")]
        assert [e.seq for e in found] == sorted({e.seq for e in found})
        assert all(before <= e.at <= datetime.now(timezone.utc) for e in found)
        assert [e.at for e in found] == sorted(e.at for e in found)
        created, started, ended, uploaded = found
        assert created.fields["template"] == "host" and created.fields["key"]
        assert started.fields["argv"][-1] == "echo hi" and started.fields["cwd"] == "/tmp"
        assert "TOKEN" in started.fields["envNames"]
        assert "not-recorded" not in repr(found)
        assert ended.fields["exitCode"] == 0 and ended.fields["pid"] == started.fields["pid"]
        assert uploaded.fields["path"] == "/tmp/note.txt" and uploaded.fields["bytes"] == 5
        assert uploaded.fields["sha256"] == hashlib.sha256(b"hello").hexdigest()

        assert sandbox.events(type="files") == [uploaded]
        assert named(sandbox.events(type="commands")) == [("commands", "started"),
                                                          ("commands", "ended")]
        assert sandbox.events(since=started.seq) == [ended, uploaded]
        assert sandbox.events(since=uploaded.seq) == []
        with pytest.raises(InvalidArgumentException, match="type"):
            sandbox.events(type="everything")


def test_the_record_outlives_the_sandbox_and_says_who_ended_it(conn):
    sandbox = SyncSandbox.create(template="host", **conn)
    other = SyncSandbox.connect(sandbox.sandbox_id, **conn)
    assert other.kill()
    found = sandbox.events(type="lifecycle")
    assert found[0].event == "created" and found[-1].event == "ended"
    assert found[-1].fields["why"] == "killed"
    assert found[-1].fields["key"] == found[0].fields["key"]
    sandbox.close()


def test_follow_events_yields_new_events_live_until_a_kill_in_another_thread(conn):
    sandbox = SyncSandbox.create(template="host", **conn)
    seen: list[SandboxEvent] = []
    first = threading.Event()

    def follow() -> None:
        for event in sandbox.follow_events():
            seen.append(event)
            first.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    try:
        assert first.wait(10), "the record so far comes first"
        assert named(seen) == [("lifecycle", "created")], "nothing else happened yet"
        sandbox.commands.run("true")
    finally:
        sandbox.kill()
    reader.join(15)
    assert not reader.is_alive(), "the stream ends after the sandbox's `ended`"
    assert named(seen) == [("lifecycle", "created"), ("commands", "started"),
                           ("commands", "ended"), ("lifecycle", "ended")]
    assert seen[-1].fields["why"] == "killed"


async def test_async_events_and_follow_with_a_kill_from_another_task(conn):
    sandbox = await AsyncSandbox.create(template="host", **conn)
    try:
        await sandbox.files.write("/tmp/a.txt", b"abc")
        assert named(await sandbox.events()) == [("lifecycle", "created"),
                                                 ("files", "uploaded")]
        uploaded = (await sandbox.events(type="files"))[0]
        assert uploaded.fields["bytes"] == 3

        seen: list[SandboxEvent] = []
        kill: asyncio.Task[bool] | None = None

        async def follow() -> None:
            nonlocal kill
            async for event in sandbox.follow_events(type="commands", since=uploaded.seq):
                seen.append(event)
                if event.event == "ended":
                    kill = asyncio.create_task(sandbox.kill())

        reader = asyncio.create_task(follow())
        await asyncio.sleep(0.5)
        assert seen == [] and not reader.done(), "no command yet: the stream waits"
        assert (await sandbox.commands.run("exit 4", check=False)).exit_code == 4
        # Filtered to commands, the stream still ends when the sandbox does.
        await asyncio.wait_for(reader, 15)
        assert kill is not None and await kill
        assert named(seen) == [("commands", "started"), ("commands", "ended")]
        assert seen[1].fields["exitCode"] == 4
    finally:
        await sandbox.kill()


def test_remote_providers_have_no_flight_record(daemon):
    sandbox = SyncSandbox.create(template="host", provider="alicloud-express", api_url=daemon.url,
                                 api_key=daemon.api_key, domain="sandbox.invalid")
    try:
        with pytest.raises(UnsupportedException, match="local abx daemon only"):
            sandbox.events()
        with pytest.raises(UnsupportedException, match="local abx daemon only"):
            sandbox.follow_events()
    finally:
        sandbox.kill()


@pytest.fixture
def other_team_conn(daemon):
    with daemon.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": "sdk-events-other", "name": "events"})
        assert made.status_code == 201, made.text
        yield {"api_url": daemon.url, "api_key": made.json()["key"]}
        assert admin.delete(f"/abx/v1/keys/{made.json()['id']}").status_code in (200, 204)


def test_an_ended_sandboxs_record_is_read_by_id_from_a_new_process(conn, other_team_conn):
    with SyncSandbox.create(template="host", **conn) as sandbox:
        sandbox.commands.run("echo from-the-past")
        sandbox_id = sandbox.sandbox_id
    # A process that never held the Sandbox object, after the sandbox ended.
    script = ("import sys, json\nfrom agent_sandbox.sync import Sandbox\n"
              "found = Sandbox.get_events(sys.argv[1], api_url=sys.argv[2], api_key=sys.argv[3])\n"
              "print(json.dumps([[e.type, e.event, e.fields.get('argv', [''])[-1]] for e in found]))")
    out = subprocess.run([sys.executable, "-c", script, sandbox_id, conn["api_url"],
                          conn["api_key"]], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [["lifecycle", "created", ""],
                                      ["commands", "started", "echo from-the-past"],
                                      ["commands", "ended", ""], ["lifecycle", "ended", ""]]
    commands = asyncio.run(AsyncSandbox.get_events(sandbox_id, type="commands", **conn))
    assert named(commands) == [("commands", "started"), ("commands", "ended")]
    with pytest.raises(SandboxNotFoundException):
        SyncSandbox.get_events(sandbox_id, **other_team_conn)
    with pytest.raises(SandboxNotFoundException):
        SyncSandbox.get_events("nosuchsandbox0", **conn)
