"""MCP client sessions (the official `mcp` SDK) against `abx mcp serve` and the daemon's /mcp,
and the checks both transports must pass."""
from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
import httpx
from mcp.client.streamable_http import streamable_http_client

from harness import ABX_BIN, Daemon

EXPECTED_TOOLS = {
    "sandbox_create": ({"template", "timeout", "envs", "metadata", "allow_internet_access"}, set()),
    "sandbox_list": (set(), set()),
    "sandbox_info": ({"sandbox_id"}, {"sandbox_id"}),
    "sandbox_set_timeout": ({"sandbox_id", "timeout"}, {"sandbox_id", "timeout"}),
    "sandbox_kill": ({"sandbox_id"}, {"sandbox_id"}),
    "sandbox_events": ({"sandbox_id", "type", "since"}, {"sandbox_id"}),
    "run_code": ({"code", "language", "context", "sandbox_id", "timeout"}, {"code"}),
    "run_command": ({"command", "cwd", "envs", "timeout", "background", "sandbox_id"},
                    {"command"}),
    "file_write": ({"path", "content", "sandbox_id"}, {"path", "content"}),
    "file_read": ({"path", "sandbox_id"}, {"path"}),
    "file_list": ({"path", "depth", "sandbox_id"}, set()),
    "file_remove": ({"path", "sandbox_id"}, {"path"}),
    "upload": ({"host_path", "path", "sandbox_id"}, {"host_path", "path"}),
    "download": ({"path", "host_path", "sandbox_id"}, {"path", "host_path"}),
}


@asynccontextmanager
async def stdio_session(daemon: Daemon, cwd: Path, *serve_args: str):
    params = StdioServerParameters(command=str(ABX_BIN), args=["mcp", "serve", *serve_args],
                                   env=daemon.env(), cwd=str(cwd))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(daemon: Daemon, api_key: str | None = None):
    headers = {"X-API-KEY": api_key or daemon.api_key}
    timeout = httpx.Timeout(30, read=300)
    async with httpx.AsyncClient(headers=headers, timeout=timeout) as client:
        async with streamable_http_client(daemon.url + "/mcp", http_client=client) as (
                read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def text_of(result) -> str:
    return "".join(item.text for item in result.content if item.type == "text")


async def call(session: ClientSession, name: str, **arguments):
    """A successful tool call's structuredContent."""
    result = await session.call_tool(name, arguments)
    assert not result.isError, f"{name} failed: {text_of(result)}"
    return result.structuredContent


async def call_error(session: ClientSession, name: str, **arguments) -> str:
    """A tool call that must fail as a tool result (isError), not a protocol error."""
    result = await session.call_tool(name, arguments)
    assert result.isError, f"{name} unexpectedly succeeded: {text_of(result)}"
    return text_of(result)


async def check_tool_schemas(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == set(EXPECTED_TOOLS)
    for name, (properties, required) in EXPECTED_TOOLS.items():
        schema = tools[name].inputSchema
        assert schema["type"] == "object", name
        assert set(schema["properties"]) == properties, name
        assert set(schema.get("required", [])) == required, name
        assert tools[name].description, name
        for prop in schema["properties"].values():
            assert "type" in prop, (name, prop)


async def check_full_session(session: ClientSession) -> None:
    """Create, write, run code, run a command, read, list, kill."""
    created = await call(session, "sandbox_create", template="base", timeout=120,
                         metadata={"test": "mcp"})
    sid = created["sandbox_id"]
    assert sid
    info = await call(session, "sandbox_info", sandbox_id=sid)
    assert info["metadata"]["test"] == "mcp"
    assert sid in [s["sandbox_id"] for s in (await call(session, "sandbox_list"))["sandboxes"]]
    await call(session, "sandbox_set_timeout", sandbox_id=sid, timeout=200)

    csv = "region,amount\nshanghai,200\nbeijing,110\n"
    written = await call(session, "file_write", sandbox_id=sid, path="/home/user/sales.csv",
                         content=csv)
    assert written["bytes"] == len(csv)
    code = ("import csv\nrows = list(csv.DictReader(open('/home/user/sales.csv')))\n"
            "print(len(rows))\nsum(int(r['amount']) for r in rows)")
    ran = await call(session, "run_code", sandbox_id=sid, code=code)
    assert ran["stdout"].strip() == "2"
    assert ran["text"] == "310"
    cmd = await call(session, "run_command", sandbox_id=sid,
                     command="wc -l < sales.csv; echo oops >&2; exit 3", cwd="/home/user")
    assert cmd["stdout"].strip() == "3"
    assert cmd["stderr"].strip() == "oops"
    assert cmd["exit_code"] == 3
    read = await call(session, "file_read", sandbox_id=sid, path="/home/user/sales.csv")
    assert read["content"] == csv
    listed = await call(session, "file_list", sandbox_id=sid, path="/home/user")
    assert "sales.csv" in [e["name"] for e in listed["entries"]]
    await call(session, "file_remove", sandbox_id=sid, path="/home/user/sales.csv")
    gone = await call_error(session, "file_read", sandbox_id=sid, path="/home/user/sales.csv")
    assert "cannot read /home/user/sales.csv" in gone and "file_list" in gone
    await call(session, "sandbox_kill", sandbox_id=sid)
    message = await call_error(session, "sandbox_info", sandbox_id=sid)
    assert "not found" in message and "sandbox_list" in message


async def check_errors_and_limits(session: ClientSession) -> str:
    """Errors are tool results; long outputs are cut; binary reads are refused.
    Returns the session sandbox these calls used."""
    ran = await call(session, "run_code", code="x = 6 * 7\nx")
    sid = ran["sandbox_id"]
    assert ran["text"] == "42"
    again = await call(session, "run_code", code="x + 1")  # same session sandbox, same state
    assert again["sandbox_id"] == sid and again["text"] == "43"

    raised = await session.call_tool("run_code", {"code": "1/0"})
    assert raised.isError and "ZeroDivisionError" in text_of(raised)
    assert "required" in await call_error(session, "run_command")
    assert "unknown argument" in await call_error(session, "run_command", command="true",
                                                  bogus=1)
    assert "not found" in await call_error(session, "sandbox_kill", sandbox_id="inope")

    long = await call(session, "run_command", command="python3 -c \"print('x' * 100000)\"")
    assert "bytes dropped" in long["stdout"]
    assert len(long["stdout"]) < 30000
    assert long["stdout"].startswith("xxx") and long["stdout"].rstrip().endswith("xxx")

    await call(session, "run_command", command="head -c 3000 /dev/urandom > /tmp/blob.bin")
    refused = await call_error(session, "file_read", path="/tmp/blob.bin")
    assert "binary" in refused and "download" in refused
    assert "directory" in await call_error(session, "file_read", path="/home")
    return sid


def sandbox_exists(daemon: Daemon, sid: str) -> bool:
    with daemon.api() as api:
        return api.get(f"/sandboxes/{sid}").status_code == 200


def load_json(path: Path):
    return json.loads(path.read_text())
