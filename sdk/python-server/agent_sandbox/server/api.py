"""What an endpoint is: one row of the table, the call it receives, what it may answer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Callable

from .schema import Schema, obj

if TYPE_CHECKING:
    from .app import App

GROUPS: dict[str, str] = {
    "core": "health, version, what this server offers (always on)",
    "commands": "the functions registered with @command",
    "file_ops": "read, write, list, stat, mkdir, delete, move files",
    "process": "run commands with streamed output, list and kill processes",
    "terminal": "an interactive PTY shell over a WebSocket",
    "system": "CPU, memory, disk and OS facts",
    "dev_tools": "git status/diff/log, code search, which developer tools are installed",
    "browser": "a headless Chromium driven by Playwright (503 where either is missing)",
    "agents": "the commands as an agent's tool manifest and as an MCP server over HTTP",
}
"""Capability groups and what each offers; a server enables `core` plus those asked for."""

DEFAULT_GROUPS = tuple(GROUPS)


@dataclass
class Call:
    """One request to an endpoint: its checked arguments (defaults filled in) and context."""

    args: dict[str, Any]
    app: App
    http: BaseHTTPRequestHandler | None = None  # the raw request (WebSocket upgrades)
    path_args: dict[str, str] = field(default_factory=dict)


class Stream:
    """An answer sent as NDJSON, one object per line, flushed as each is made."""

    def __init__(self, messages: Iterator[dict[str, Any]]) -> None:
        self.messages = messages


class Upgraded:
    """The handler took over the connection (a WebSocket); nothing more is sent."""


Handler = Callable[[Call], Any]


@dataclass(frozen=True)
class Endpoint:
    """One row of ENDPOINTS."""

    method: str
    path: str  # may hold one {name} segment, passed in Call.path_args
    group: str
    handler: Handler
    schema: Schema
    description: str

    def describe(self) -> dict[str, Any]:
        """The row as JSON, for GET / (no handler)."""
        return {"method": self.method, "path": self.path, "group": self.group,
                "description": self.description, "schema": self.schema}


def row(method: str, path: str, group: str, handler: Handler, description: str,
        properties: dict[str, Schema] | None = None, required: tuple[str, ...] = ()) -> Endpoint:
    """An endpoint whose arguments are an object with `properties`."""
    return Endpoint(method, path, group, handler, obj(properties or {}, required), description)
