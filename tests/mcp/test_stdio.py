"""`abx mcp serve` driven by the official MCP Python SDK's stdio client."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from mcp import types

from harness import ABX_BIN
from helpers import wait_until_async
from mcp_helpers import (call, call_error, check_errors_and_limits, check_full_session,
                         check_tool_schemas, sandbox_exists, stdio_session, text_of)


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


def test_full_session(daemon, work_dir):
    async def scenario():
        async with stdio_session(daemon, work_dir) as session:
            await check_tool_schemas(session)
            await check_full_session(session)
            assert (await session.send_ping()) is not None
    asyncio.run(scenario())


def test_one_call_workflow_and_errors(daemon, work_dir):
    async def scenario():
        async with stdio_session(daemon, work_dir) as session:
            sid = await check_errors_and_limits(session)
            assert sandbox_exists(daemon, sid)
        return sid
    sid = asyncio.run(scenario())
    assert not sandbox_exists(daemon, sid), "the session sandbox outlived the session"


def test_upload_download_confined_to_allowed_dirs(daemon, work_dir):
    allowed = work_dir / "allowed"
    allowed.mkdir()
    (allowed / "data.txt").write_text("hello from the host\n")
    (allowed / "escape").symlink_to("/etc/hostname")

    async def scenario():
        async with stdio_session(daemon, work_dir, "--allow-dir", str(allowed)) as session:
            up = await call(session, "upload", host_path=str(allowed / "data.txt"),
                            path="/home/user/data.txt")
            assert up["bytes"] == 20
            assert (await call(session, "file_read", path="/home/user/data.txt"))["content"] \
                == "hello from the host\n"
            await call(session, "run_command",
                       command="printf '\\x00\\x01\\xff' > /home/user/b.bin")
            down = await call(session, "download", path="/home/user/b.bin",
                              host_path=str(allowed / "out" / "b.bin"))
            assert down["bytes"] == 3
            assert (allowed / "out" / "b.bin").read_bytes() == b"\x00\x01\xff"

            for host_path in ["/etc/passwd", str(allowed / "escape"),
                              str(allowed / ".." / "x.txt"), os.path.expanduser("~/.ssh/id_rsa")]:
                message = await call_error(session, "upload", host_path=host_path,
                                           path="/home/user/stolen")
                assert "outside the directories" in message, message
            message = await call_error(session, "download", path="/home/user/b.bin",
                                       host_path=str(work_dir / "b.bin"))
            assert "outside the directories" in message
            assert not (work_dir / "b.bin").exists()
    asyncio.run(scenario())


def test_cancel_interrupts_a_running_command(daemon, work_dir):
    async def scenario():
        async with stdio_session(daemon, work_dir) as session:
            await call(session, "run_command", command="true")  # make the session sandbox
            request_id = session._request_id  # the id the SDK gives the next request
            task = asyncio.create_task(session.call_tool(
                "run_command", {"command": "sleep 30; echo finished"}))
            await asyncio.sleep(1.0)
            # The SDK does not send notifications/cancelled for a cancelled task itself.
            await session.send_notification(types.ClientNotification(types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=request_id, reason="test"))))
            task.cancel()  # a cancelled request gets no answer

            async def sleep_is_gone() -> bool:  # and the session still answers
                ps = await call(session, "run_command", command="pgrep -x sleep || echo none")
                return ps["stdout"].strip() == "none"
            await wait_until_async(sleep_is_gone, what="the cancelled command to end")
    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_command_timeout_is_a_tool_error(daemon, work_dir):
    async def scenario():
        async with stdio_session(daemon, work_dir) as session:
            result = await session.call_tool("run_command", {"command": "sleep 10", "timeout": 1},
                                             read_timeout_seconds=timedelta(seconds=30))
            assert result.isError and "timeout" in text_of(result)
    asyncio.run(scenario())


def test_without_allow_dir_transfers_are_refused_and_touch_nothing(daemon, work_dir):
    (work_dir / "secret.txt").write_text("host only\n")

    async def scenario():
        async with stdio_session(daemon, work_dir) as session:  # no --allow-dir
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert "with none, this tool is off" in tools["upload"].description
            await call(session, "run_command", command="echo sandbox > /home/user/out.txt")
            for host_path in ["secret.txt", str(work_dir / "secret.txt"), "/etc/hostname"]:
                message = await call_error(session, "upload", host_path=host_path,
                                           path="/home/user/secret.txt")
                assert message.startswith("file transfer is off"), message
                assert "abx mcp serve --allow-dir DIR" in message
            for host_path in ["out.txt", str(work_dir / "sub" / "out.txt")]:
                message = await call_error(session, "download", path="/home/user/out.txt",
                                           host_path=host_path)
                assert message.startswith("file transfer is off"), message
            listed = await call(session, "file_list", path="/home/user")
            assert "secret.txt" not in [e["name"] for e in listed["entries"]]
    asyncio.run(scenario())
    assert sorted(p.name for p in work_dir.iterdir()) == ["secret.txt"]


def test_a_call_in_flight_is_answered_after_stdin_closes(daemon, work_dir):
    """MCP's stdio transport ends with the client closing the server's stdin: a tool call sent
    just before still gets its answer, then the server exits 0."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "eof-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "run_command",
                    "arguments": {"command": "sleep 1; echo answered-after-eof"}}},
    ]
    server = subprocess.run([str(ABX_BIN), "mcp", "serve"], env=daemon.env(), cwd=work_dir,
                            input="".join(json.dumps(line) + "\n" for line in lines),
                            capture_output=True, text=True, timeout=120)
    assert server.returncode == 0, server.stderr
    replies = {r["id"]: r for r in map(json.loads, server.stdout.splitlines()) if "id" in r}
    assert "answered-after-eof" in json.dumps(replies[2]["result"]), replies
