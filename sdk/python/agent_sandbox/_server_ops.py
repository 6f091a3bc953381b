"""Requests to the in-sandbox server (agent-sandbox-server, port 9000) through the sandbox's
port proxy, and the typed errors for its answers; shared by the async and sync clients."""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import httpx

from ._http import Call, error_from_response, parse_error_body
from ._ops import Target
from .errors import (
    AlreadyExistsException,
    InvalidArgumentException,
    NotFoundException,
    SandboxException,
    TimeoutException,
    UnsupportedException,
)

SERVER_PORT = 9000
"""Where templates start agent-sandbox-server."""


@dataclass
class ProcessResult:
    """A finished `process.run`: its exit code and all of its output."""

    pid: int
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None  # the server's message if the stream failed midway


@dataclass
class ProcessOutput:
    """Collects a `process.run` stream into a ProcessResult."""

    result: ProcessResult = field(default_factory=lambda: ProcessResult(0, None))

    def add(self, message: dict[str, Any]) -> tuple[str, str] | None:
        """Takes one message; returns (stream, text) for output, None otherwise."""
        kind = message.get("type")
        if kind == "start":
            self.result.pid = int(message["pid"])
        elif kind in ("stdout", "stderr"):
            text = str(message.get("data", ""))
            if kind == "stdout":
                self.result.stdout += text
            else:
                self.result.stderr += text
            return kind, text
        elif kind == "timeout":
            self.result.timed_out = True
        elif kind == "exit":
            self.result.exit_code = int(message["exit_code"])
        elif kind == "error":
            self.result.error = str(message.get("message"))
        return None


def server_call(target: Target, port: int, method: str, path: str,
                params: dict[str, Any] | None = None, body: Any = None,
                timeout: float | httpx.Timeout | None = None) -> Call:
    """A request to `path` on the server at `port` in the sandbox."""
    query = {name: _query_value(value) for name, value in (params or {}).items()
             if value is not None}
    return Call(method, target.url(port, path), "server", f"server {method} {path}",
                headers=target.headers(port), params=query or None, json=body,
                timeout=timeout)


def stream_timeout(seconds: float) -> httpx.Timeout:
    """A streamed run's HTTP timeouts: quiet output may last as long as the command may."""
    return httpx.Timeout(30.0, read=seconds + 30 if seconds else None)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def command_path(name: str) -> str:
    """POST path of a registered command."""
    if not name:
        raise InvalidArgumentException("command name: empty")
    return "/commands/" + urllib.parse.quote(name, safe="")


def server_error(call: Call, status: int, body: bytes) -> SandboxException:
    """The typed error for the server's (or the proxy's) failed answer to `call`."""
    code, message = parse_error_body(body)
    if code is None or status in (401, 429) or status == 502:
        # Not the server's JSON: the proxy (no server listening, sandbox gone) or the daemon.
        return error_from_response(call, status, body)
    text = f"{call.subject}: {message}"
    if status == 400:
        return InvalidArgumentException(text)
    if status == 404:
        return NotFoundException(text)
    if status == 409:
        return AlreadyExistsException(text)
    if status == 503:
        return UnsupportedException(text)
    if status == 504:
        return TimeoutException(text)
    return SandboxException(f"{text} (HTTP {status})")


def terminal_url(target: Target, port: int, cmd: str | None, cols: int, rows: int) -> str:
    """ws(s):// URL of the server's PTY terminal."""
    params = {"cols": str(cols), "rows": str(rows)}
    if cmd:
        params["cmd"] = cmd
    url = target.url(port, "/terminal?" + urllib.parse.urlencode(params))
    return "ws" + url[len("http"):] if url.startswith("http") else url


def file_content(content: str | bytes) -> dict[str, str]:
    """The write body's content and encoding for text or bytes."""
    if isinstance(content, bytes):
        return {"content": base64.b64encode(content).decode(), "encoding": "base64"}
    return {"content": content, "encoding": "utf-8"}


def png(answer: dict[str, Any]) -> bytes:
    """The bytes of a screenshot answer."""
    return base64.b64decode(answer["data"])
