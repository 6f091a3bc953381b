"""Issue 37's story: an agent-like script runs in a sandbox (a command, a `run_code` cell, a
file written and one removed, an allowed and a denied request, an out-of-memory kill) and a
second key of its team kills it. Every item is in the sandbox's flight record once, in order,
with its fields, read through each surface a user has: the HTTP API, `abx events --json`, the
Python SDK, an MCP client and the dashboard's timeline (Playwright); another team's key gets
404 on each. The daemon is then restarted: the record is whole after it, a record past its
retention is gone, and a sandbox that writes far more than the record's bound keeps only the
newest events, without a gap. In the private test world (tests/net), template `host`."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from harness import stop_daemon
from helpers import abx, wait_until
from netcheck import CURL
from world import (
    API,
    WWW,
    World,
    WorldDaemon,
    daemon_in_world,
    start_daemon_in_world,
    stop_process,
)

pytestmark = pytest.mark.net

sdk = pytest.importorskip("agent_sandbox.sync", reason="the Python SDK (sdk/python) is on PYTHONPATH")
from agent_sandbox import CommandExitException

HOG = "python3 -c 'x = bytearray(300 * 1024 * 1024)'"
BOUND_MIB = 1  # the story's daemon keeps 1 to 2 MiB a sandbox (config.json's events.maxMiB)


@dataclass
class Item:
    """One thing the story did, as the record must show it: its type and event and fields
    it must have (a subset)."""
    type: str
    event: str
    fields: dict[str, Any]


@dataclass
class Story:
    d: WorldDaemon
    sandbox_id: str
    steps: list[list[Item]]  # each step's items; the first of a step comes first
    killer_key_id: str
    foreign_key: str
    before_restart: list[dict]
    expired_id: str
    sdk_events: list[Any]
    sdk_commands: list[Any]
    timeline: list[dict] | str  # the dashboard's rows, or why there are none


def record(d: WorldDaemon, sandbox_id: str, key: str | None = None) -> httpx.Response:
    headers = {"X-API-KEY": key} if key else {}
    with d.api() as api:
        return api.get(f"/abx/v1/sandboxes/{sandbox_id}/events", headers=headers)


def events(d: WorldDaemon, sandbox_id: str) -> list[dict]:
    r = record(d, sandbox_id)
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in r.text.splitlines()]


def make_key(d: WorldDaemon, team: str, name: str) -> dict:
    with d.api() as api:
        r = api.post("/abx/v1/keys", json={"team": team, "name": name})
    assert r.status_code == 201, r.text
    return r.json()


def step(d: WorldDaemon, sandbox_id: str, steps: list[list[Item]], items: list[Item],
         action) -> Any:
    """Runs one step of the story and waits until its items are recorded (a connection's
    comes when it closes, maybe after its command's end), so steps never interleave."""
    result = action()
    if items:
        steps.append(items)
    total = sum(len(s) for s in steps)
    try:
        wait_until(lambda: len(events(d, sandbox_id)) >= total, timeout=15,
                   what=f"{total} events after {[(i.type, i.event) for i in items]}")
    except AssertionError as e:
        raise AssertionError(f"{e}; recorded: {events(d, sandbox_id)[-3:]}") from None
    return result


def run_story(d: WorldDaemon) -> tuple[Any, list[list[Item]], str, list[dict] | str]:
    """The agent-like script, through the Python SDK; the kill by a second key of the team,
    through `abx kill`, watched in the dashboard. Returns the SDK's sandbox, the steps, the
    killer key's id and the dashboard's timeline rows (or why there are none)."""
    conn = {"api_url": d.url, "api_key": d.api_key}
    sb = sdk.Sandbox.create(template="host", timeout=300, memory_mb=64, **conn, network={
        "deny_out": ["0.0.0.0/0"], "allow_out": ["api.example.test"]})
    sid, steps = sb.sandbox_id, []
    d.sandbox_ids.append(sid)
    steps.append([Item("lifecycle", "created", {"template": "host", "memoryMB": 64})])

    def command(line: str, **ended: Any) -> list[Item]:
        return [Item("commands", "started", {"argv": lambda argv: argv[-1] == line}),
                Item("commands", "ended", ended)]

    step(d, sid, steps, command("echo story | tee /tmp/scratch.txt", exitCode=0,
                                outputHead="story\n"),
         lambda: sb.commands.run("echo story | tee /tmp/scratch.txt"))
    cell = step(d, sid, steps, [Item("commands", "code started",
                                     {"code": "x = 6 * 7\nx", "language": "python"}),
                                Item("commands", "code ended", {})],
                lambda: sb.run_code("x = 6 * 7\nx"))
    assert cell.error is None and cell.text == "42", cell
    step(d, sid, steps, [Item("files", "uploaded", {"path": "/tmp/notes.txt", "bytes": 5})],
         lambda: sb.files.write("/tmp/notes.txt", "notes"))
    step(d, sid, steps, [Item("files", "removed", {"path": "/tmp/scratch.txt"})],
         lambda: sb.files.remove("/tmp/scratch.txt"))

    allowed = f"{CURL} -o /dev/null -w '%{{http_code}}' http://api.example.test/status/204"
    ok = step(d, sid, steps, [
        *command(allowed, exitCode=0)[:1],
        Item("network", "dns", {"host": "api.example.test", "allowed": True,
                                "rule": "allowOut api.example.test"}),
        Item("network", "connection", {"host": "api.example.test", "ip": API, "port": 80,
                                       "allowed": True, "rule": "allowOut api.example.test"}),
        *command(allowed, exitCode=0)[1:]], lambda: sb.commands.run(allowed))
    assert ok.stdout == "204", ok

    denied = f"{CURL} --resolve example.test:80:{WWW} http://example.test/status/204"

    def refused() -> None:
        with pytest.raises(CommandExitException):
            sb.commands.run(denied)
    step(d, sid, steps, [
        *command(denied)[:1],
        Item("network", "connection", {"host": "example.test", "ip": WWW, "port": 80,
                                       "allowed": False}),
        *command(denied)[1:]], refused)

    def out_of_memory() -> None:
        with pytest.raises(CommandExitException) as raised:
            sb.commands.run(HOG)
        assert raised.value.exit_code == 137
    # Killed by a signal, it has no exit code (the SDK says 137, as a shell would).
    step(d, sid, steps, command(HOG, exitCode=None, outOfMemory=True,
                                status="killed: out of memory"), out_of_memory)

    killer = make_key(d, "default", "reviewer")
    env = {"ABX_SANDBOX_API_KEY": killer["key"]}
    kill = [Item("lifecycle", "ended", {"why": "killed", "key": killer["id"]})]
    # The user watches the sandbox's page (the dashboard shows a live sandbox only): its
    # terminal starts a shell, a command of the record too; the kill ends the page's timeline.
    with dashboard(d) as page:
        if isinstance(page, str):
            step(d, sid, steps, kill, lambda: abx(d, "kill", sid, "--yes", env=env))
            return sb, steps, killer["id"], page
        page.goto(f"{d.url}/dashboard#/sandbox/{sid}")
        page.wait_for_selector("#events tr[data-type='commands'][data-event='ended']",
                               timeout=15000)
        terminal = page.locator("#terminal").count() > 0  # an abx built with xterm.js
        step(d, sid, steps, [Item("commands", "started", {"pty": True})] if terminal else [],
             lambda: None)
        step(d, sid, steps, kill, lambda: abx(d, "kill", sid, "--yes", env=env))
        page.wait_for_selector("#events tr[data-type='lifecycle'][data-event='ended']",
                               timeout=15000)
        return sb, steps, killer["id"], timeline_rows(page)


CHROMIUM = Path("/usr/bin/chromium")
# Nothing leaves the machine: every request but to loopback goes to a proxy that is not
# there, and no name resolves (as tests/dashboard/conftest.py).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--proxy-server=http://127.0.0.1:9",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


@contextlib.contextmanager
def dashboard(d: WorldDaemon) -> Iterator[Any]:
    """A logged-in dashboard page in Debian's chromium (Playwright), or the reason there is
    none here."""
    try:
        from playwright import sync_api
    except ImportError:
        yield "needs Playwright (make deps)"
        return
    if not CHROMIUM.exists():
        yield "needs Debian's chromium (apt-get install chromium)"
        return
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                             headless=True)
        try:
            page = browser.new_page()
            page.goto(d.url + "/dashboard")
            page.fill("#api-key", d.api_key)
            page.click("#login")
            page.wait_for_selector("#nav:not([hidden])")
            yield page
        finally:
            browser.close()


def timeline_rows(page) -> list[dict]:
    """Each row of the timeline, top to bottom, from the DOM: seq, type, event, detail."""
    return page.eval_on_selector_all(
        "#events tbody tr",
        "rows => rows.map(r => ({seq: Number(r.dataset.seq), type: r.dataset.type,"
        " event: r.dataset.event, detail: r.querySelector('td.detail').textContent}))")


def lxcfs_pids(world: World, mountpoint: Path) -> list[int]:
    """The lxcfs processes in the daemon namespace serving `mountpoint`."""
    found = []
    for pid in subprocess.run(["ip", "netns", "pids", world.daemon_ns], capture_output=True,
                              text=True, check=False).stdout.split():
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if args[0].endswith(b"lxcfs") and str(mountpoint).encode() in args:
                found.append(int(pid))
    return found


def restart(d: WorldDaemon) -> None:
    """Stops the daemon and starts another on its data dir, in place of `d`. `world.sh exec`
    gives each daemon a mount namespace of its own, so the new one cannot adopt the first
    one's lxcfs: that one is ended by its pid."""
    assert d.world is not None
    first_lxcfs = lxcfs_pids(d.world, d.data_dir / "lxcfs")
    stop_daemon(d, kill_sandboxes=False)
    for proc in d.bridge:
        stop_process(proc)
    again = start_daemon_in_world(d.world, d.data_dir)
    d.url, d.proc, d.bridge = again.url, again.proc, again.bridge
    for pid in first_lxcfs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


@pytest.fixture(scope="module")
def story(net_world: World) -> Iterator[Story]:
    with daemon_in_world(net_world, prefix="abx-story-",
                         config={"events": {"maxMiB": BOUND_MIB}}) as d:
        sb, steps, killer_key_id, timeline = run_story(d)
        sid = sb.sandbox_id
        sdk_events, sdk_commands = sb.events(), sb.events(type="commands")
        sb.close()
        foreign = make_key(d, "elsewhere", "outsider")["key"]
        # A record past its retention (24 h): gone at the daemon's next start.
        expired = abx(d, "create", "--template", "host")
        assert expired.returncode == 0, expired.stderr
        expired_id = expired.stdout.strip()
        d.sandbox_ids.append(expired_id)
        assert abx(d, "kill", expired_id, "--yes").returncode == 0
        day_ago = time.time() - 25 * 3600
        for f in (d.data_dir / "events").glob(f"{expired_id}.jsonl*"):
            os.utime(f, (day_ago, day_ago))
        before = events(d, sid)
        restart(d)
        yield Story(d, sid, steps, killer_key_id, foreign, before, expired_id, sdk_events,
                    sdk_commands, timeline)


def check_story(found: list[dict], steps: list[list[Item]]) -> None:
    """`found` is the story: each step's items once, steps in order, the first item of a
    step first in it (the rest may race: a connection is recorded when it closes), with
    the item's fields; seqs rise by one."""
    assert [e["seq"] for e in found] == list(range(found[0]["seq"], found[0]["seq"] + len(found)))
    assert len(found) == sum(len(s) for s in steps), \
        f"expected {[[(i.type, i.event) for i in s] for s in steps]}, got " \
        f"{[(e['type'], e['event']) for e in found]}"
    at = 0
    for items in steps:
        got = found[at:at + len(items)]
        at += len(items)
        assert (got[0]["type"], got[0]["event"]) == (items[0].type, items[0].event), got
        unmatched = list(got)
        for item in items:
            match = next((e for e in unmatched if (e["type"], e["event"]) == (item.type, item.event)
                          and all(v(e.get(k)) if callable(v) else e.get(k) == v
                                  for k, v in item.fields.items())), None)
            assert match is not None, f"no {item} in {got}"
            unmatched.remove(match)
        dns = [e["seq"] for e in got if e["event"] == "dns"]
        connections = [e["seq"] for e in got if e["event"] == "connection"]
        assert not dns or dns[0] < connections[0], "the name was asked before the connection"
    started = [e for e in found if e["event"] == "started" and not e["pty"]]
    ended = [e for e in found if e["type"] == "commands" and e["event"] == "ended"]
    assert [e["pid"] for e in started] == [e["pid"] for e in ended]
    denied = next(e for e in found if e["event"] == "connection" and not e["allowed"])
    assert "denyOut 0.0.0.0/0" in denied["reason"] and "bytesOut" not in denied, denied
    allowed = next(e for e in found if e["event"] == "connection" and e["allowed"])
    assert allowed["bytesOut"] > 0 and allowed["bytesIn"] > 0, allowed


def test_the_api_tells_the_story_and_a_restart_lost_nothing(story):
    found = events(story.d, story.sandbox_id)
    check_story(found, story.steps)
    assert found == story.before_restart
    assert found[0]["key"] != story.killer_key_id, "the creator's key, not the killer's"
    assert record(story.d, story.sandbox_id, story.foreign_key).status_code == 404


def test_the_retention_removed_an_old_record_at_the_restart(story):
    assert record(story.d, story.expired_id).status_code == 404
    assert not list((story.d.data_dir / "events").glob(f"{story.expired_id}.jsonl*"))


def test_abx_events_json_prints_the_same_record(story):
    r = abx(story.d, "events", story.sandbox_id, "--json")
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == story.before_restart
    table = abx(story.d, "events", story.sandbox_id)
    assert table.returncode == 0, table.stderr
    assert len(table.stdout.splitlines()) == 1 + len(story.before_restart)
    foreign = abx(story.d, "events", story.sandbox_id, env={"ABX_SANDBOX_API_KEY": story.foreign_key})
    assert foreign.returncode == 1 and f"no events of sandbox {story.sandbox_id}" in foreign.stderr


def test_the_sdk_returned_the_same_record(story):
    """Read before the restart, through the object that ran the story (the SDK reads a
    record through a Sandbox object only, and the restarted daemon has another address)."""
    as_lines = [{"seq": e.seq, "at": round(e.at.timestamp() * 1000), "type": e.type,
                 "event": e.event, **e.fields} for e in story.sdk_events]
    assert as_lines == story.before_restart
    assert [e.event for e in story.sdk_commands] == \
        [e["event"] for e in story.before_restart if e["type"] == "commands"]


def test_an_mcp_client_gets_the_same_record(story):
    pytest.importorskip("mcp", reason="the MCP SDK is installed by make deps")
    from mcp.client.streamable_http import streamable_http_client

    from mcp import ClientSession

    async def tool(key: str, **arguments):
        async with httpx.AsyncClient(headers={"X-API-KEY": key}, timeout=60) as client, \
                streamable_http_client(story.d.url + "/mcp", http_client=client) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("sandbox_events", arguments)

    mine = asyncio.run(tool(story.d.api_key, sandbox_id=story.sandbox_id))
    assert not mine.isError, mine.content
    assert mine.structuredContent["events"] == story.before_restart
    assert mine.structuredContent["more"] is False
    theirs = asyncio.run(tool(story.foreign_key, sandbox_id=story.sandbox_id))
    assert theirs.isError and "no events of sandbox" in theirs.content[0].text


@pytest.fixture
def timeline(story) -> list[dict]:
    if isinstance(story.timeline, str):
        pytest.skip(story.timeline)
    return story.timeline


def shown(rows: list[dict]) -> list[dict]:
    return [{k: r[k] for k in ("seq", "type", "event")} for r in rows]


def test_the_dashboard_timeline_shows_the_record(story, timeline):
    want = [{"seq": e["seq"], "type": e["type"], "event": e["event"]}
            for e in story.before_restart if e["type"] != "network"]
    assert [r for r in shown(timeline) if r["type"] != "network"] == want
    by_seq = {r["seq"]: r["detail"] for r in timeline}
    for e in story.before_restart:
        if e["event"] == "removed":
            assert "/tmp/scratch.txt" in by_seq[e["seq"]]
        if e["type"] == "commands" and e["event"] == "ended" and e.get("outOfMemory"):
            assert "out of memory" in by_seq[e["seq"]]
        if e["type"] == "lifecycle" and e["event"] == "ended":
            assert "killed" in by_seq[e["seq"]]


def test_the_dashboard_timeline_shows_the_network_events_too(story, timeline):
    assert shown(timeline) == [{"seq": e["seq"], "type": e["type"], "event": e["event"]}
                               for e in story.before_restart]


def test_the_record_keeps_its_bound_newest_last_without_a_gap(story):
    """Far more than the bound (each command's end keeps 8 KiB of its output): between the
    bound and twice it stay on disk, the oldest half goes, the numbering has no gap."""
    conn = {"api_url": story.d.url, "api_key": story.d.api_key}
    with sdk.Sandbox.create(template="host", timeout=300, **conn) as sb:
        story.d.sandbox_ids.append(sb.sandbox_id)
        big = "head -c 20000 /dev/zero | tr '\\0' x"
        runs = (3 * BOUND_MIB << 20) // 8500
        for _ in range(runs):
            sb.commands.run(big)
        found = events(story.d, sb.sandbox_id)
    on_disk = sum(f.stat().st_size for f in (story.d.data_dir / "events").glob(f"{sb.sandbox_id}.jsonl*"))
    assert (BOUND_MIB << 20) <= on_disk <= 2 * (BOUND_MIB << 20) + 10000, on_disk
    assert found[0]["seq"] > 1 and found[0]["type"] != "lifecycle", "the oldest went"
    assert [e["seq"] for e in found] == list(range(found[0]["seq"], found[-1]["seq"] + 1))
    assert (found[-1]["type"], found[-1]["event"]) == ("commands", "ended")
    assert found[-1]["seq"] == 1 + 2 * runs, "created, then each command's start and end"
    assert events(story.d, story.sandbox_id) == story.before_restart, "another record untouched"
