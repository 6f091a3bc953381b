"""sandbox_events through the real `abx mcp serve` (the official MCP client over stdio): an
agent reviews what it did in a sandbox, its flight record, in order, with the right fields,
filtered by type, paged by seq, also after the sandbox ended; a wrong id or type is a tool
error."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mcp_helpers import call, call_error, stdio_session, text_of


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


def named(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["event"]) for e in events]


async def events_of(session, sid: str, **arguments) -> tuple[dict, str]:
    result = await session.call_tool("sandbox_events", {"sandbox_id": sid, **arguments})
    assert not result.isError, text_of(result)
    return result.structuredContent, text_of(result)


def test_sandbox_events_tells_the_agent_what_it_did(daemon, work_dir):
    async def scenario():
        async with stdio_session(daemon, work_dir) as session:
            sid = (await call(session, "sandbox_create", template="base",
                              timeout=120))["sandbox_id"]
            ran = await call(session, "run_command", sandbox_id=sid, cwd="/tmp",
                             command="echo flight-check; exit 3",
                             envs={"AGENT_TOKEN": "never-recorded"})
            assert ran["exit_code"] == 3

            record, text = await events_of(session, sid)
            events = record["events"]
            assert named(events) == [("lifecycle", "created"), ("commands", "started"),
                                     ("commands", "ended")]
            assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
            assert all(isinstance(e["at"], int) and e["at"] > 0 for e in events)
            created, started, ended = events
            assert created["template"] == "base" and created["timeoutS"] == 120
            assert created["key"], created
            assert started["argv"][-1] == "echo flight-check; exit 3"
            assert started["cwd"] == "/tmp" and "AGENT_TOKEN" in started["envNames"]
            assert ended["exitCode"] == 3 and ended["pid"] == started["pid"]
            assert record["more"] is False and record["next_since"] == ended["seq"]
            assert "never-recorded" not in json.dumps(record) + text
            # The text lists the same events, one line each, oldest first.
            lines = [fields for fields in (line.split("  ") for line in text.splitlines())
                     if fields[0].isdigit()]
            assert [(int(f[0]), f[2], f[3]) for f in lines] == \
                [(e["seq"], e["type"], e["event"]) for e in events]
            assert lines[0][1].endswith("Z") and "argv=" in lines[1][4]
            assert "exitCode=3" in lines[2][4]

            commands, _ = await events_of(session, sid, type="commands")
            assert named(commands["events"]) == [("commands", "started"), ("commands", "ended")]
            lifecycle, _ = await events_of(session, sid, type="lifecycle")
            assert named(lifecycle["events"]) == [("lifecycle", "created")]
            later, _ = await events_of(session, sid, since=created["seq"])
            assert later["events"] == events[1:]
            nothing, text = await events_of(session, sid, since=ended["seq"])
            assert nothing["events"] == [] and "next_since" not in nothing
            assert text.startswith("No events of sandbox " + sid)

            # The record outlives the sandbox, and says how it ended.
            await call(session, "sandbox_kill", sandbox_id=sid)
            after, _ = await events_of(session, sid, since=ended["seq"])
            assert named(after["events"]) == [("lifecycle", "ended")]
            assert after["events"][0]["why"] == "killed"
            assert after["events"][0]["key"] == created["key"]

            unknown = await call_error(session, "sandbox_events", sandbox_id="inosuchsandbox")
            assert "no events of sandbox inosuchsandbox" in unknown
            bad_type = await call_error(session, "sandbox_events", sandbox_id=sid,
                                        type="packets")
            assert "type must be one of" in bad_type
            assert "since must be at least 0" in await call_error(
                session, "sandbox_events", sandbox_id=sid, since=-1)
    asyncio.run(scenario())


def test_a_long_record_comes_a_bounded_page_at_a_time(daemon, work_dir):
    async def scenario():
        async with stdio_session(daemon, work_dir) as session:
            sid = (await call(session, "sandbox_create", template="base",
                              timeout=120))["sandbox_id"]
            long_command = "true " + "x" * 50000
            await call(session, "run_command", sandbox_id=sid, command=long_command)
            for i in range(110):
                await call(session, "run_command", sandbox_id=sid, command=f"echo {i}")
            pages, since = [], None
            while True:
                arguments = {} if since is None else {"since": since}
                page, text = await events_of(session, sid, **arguments)
                assert len(text) < 21000, len(text)  # the tools' 20 000-byte output limit
                pages.append(page)
                if not page["more"]:
                    break
                assert "call sandbox_events again with since=" in text
                since = page["next_since"]
            await call(session, "sandbox_kill", sandbox_id=sid)
        return pages
    pages = asyncio.run(scenario())
    assert len(pages) >= 2
    assert all(0 < len(page["events"]) <= 200 for page in pages)
    events = [event for page in pages for event in page["events"]]
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[-1]["seq"] + 1))
    assert named(events) == [("lifecycle", "created")] + \
        [("commands", "started"), ("commands", "ended")] * 111
    argv = events[1]["argv"][-1]  # the long command, cut in structuredContent too
    assert argv.startswith("true xxx") and "more bytes]" in argv and len(argv) < 2100
    assert [e["argv"][-1] for e in events[3::2]] == [f"echo {i}" for i in range(110)]
