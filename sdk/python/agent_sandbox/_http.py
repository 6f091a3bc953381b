"""Transport-neutral HTTP pieces: a request description and the mapping of failures to errors."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from ._config import ConnectionConfig, follow_moved_daemon, notice_moved_daemon
from .errors import (
    AlreadyExistsException,
    AuthenticationException,
    ConflictException,
    InvalidArgumentException,
    NotFoundException,
    RateLimitException,
    SandboxClosedException,
    SandboxException,
    SandboxNotFoundException,
    TimeoutException,
    UnsupportedException,
)

MAX_RATE_LIMIT_RETRIES = 5
MAX_RETRY_AFTER = 10.0

# Statuses a non-Connect proxy may answer with, as Connect codes (what E2B's SDK does).
_STATUS_CODES = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
                 404: "not_found", 409: "already_exists", 413: "resource_exhausted",
                 429: "resource_exhausted", 501: "unimplemented", 502: "unavailable",
                 503: "unavailable", 504: "deadline_exceeded"}


@dataclass
class Call:
    """One HTTP request, described without sending it, plus what it is about (for errors)."""

    method: str
    url: str
    plane: str  # "control", "envd" or "jupyter": decides how failures read
    subject: str  # e.g. "sandbox i1x2", "/home/user/a.txt", "process 42"
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] | None = None
    json: Any = None
    content: Any = None
    files: Any = None
    timeout: Any = None  # None: the client's default; else an httpx timeout value
    sandbox_id: str | None = None  # control-plane calls about one sandbox: 404 means it is gone

    def send_kwargs(self, default_timeout: float) -> dict[str, Any]:
        """Keyword arguments for httpx's `build_request`."""
        kwargs: dict[str, Any] = {"headers": self.headers}
        for name in ("params", "json", "content", "files"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        kwargs["timeout"] = default_timeout if self.timeout is None else self.timeout
        return kwargs


def retry_delay(status: int, headers: Mapping[str, str], attempt: int) -> float | None:
    """Seconds to wait before retrying a 429, or None when retries are used up.

    Only a 429 with Retry-After is retried: without it waiting does not help (a quota of
    live sandboxes, memory or disk stays full until the caller kills one)."""
    if status != 429 or attempt >= MAX_RATE_LIMIT_RETRIES:
        return None
    try:
        delay = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return min(max(delay, 0.0), MAX_RETRY_AFTER)


def parse_error_body(body: bytes) -> tuple[str | None, str]:
    """(Connect code or None, message) from a JSON or plain-text error body."""
    text = body.decode(errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return None, text
    if not isinstance(data, dict):
        return None, text
    code = data.get("code")
    message = str(data.get("message") or text)
    return (code if isinstance(code, str) else None), message


def error_from_response(call: Call, status: int, body: bytes) -> SandboxException:
    """The typed error for a failed HTTP response to `call`."""
    code, message = parse_error_body(body)
    if status == 429:
        # The daemon's message names the limit, its value and how to raise it.
        return RateLimitException(f"{call.subject}: {message}")
    if status == 401 or code == "unauthenticated":
        what = "API key" if call.plane == "control" else "sandbox access token"
        return AuthenticationException(
            f"{call.subject}: the server rejected the {what} ({message}); "
            "check api_key= / ABX_SANDBOX_API_KEY")
    if call.plane == "control":
        return _control_error(call, status, message)
    if status == 502:
        return _proxy_error(call, message)
    return error_from_code(call, code or _STATUS_CODES.get(status, "unknown"), message, status)


def error_from_code(call: Call, code: str, message: str, status: int = 200) -> SandboxException:
    """The typed error for a Connect error code (unary body or end-of-stream frame)."""
    if code == "not_found":
        return NotFoundException(f"{call.subject}: not found ({message})")
    if code == "already_exists":
        return AlreadyExistsException(f"{call.subject}: already exists ({message})")
    if code == "invalid_argument":
        return InvalidArgumentException(f"{call.subject}: invalid argument ({message})")
    if code == "deadline_exceeded":
        return TimeoutException(f"{call.subject}: deadline exceeded ({message}); "
                                "pass a larger timeout= (0 means none for commands)")
    if code == "unavailable":
        return TimeoutException(f"{call.subject}: the sandbox is not reachable ({message}); "
                                "it may have timed out: extend it with set_timeout()")
    if code == "unauthenticated":
        return AuthenticationException(f"{call.subject}: {message}")
    if code == "unimplemented":
        return UnsupportedException(
            f"{call.subject}: the server does not implement this call ({message})")
    return SandboxException(f"{call.subject}: {code} (HTTP {status}): {message}")


def _control_error(call: Call, status: int, message: str) -> SandboxException:
    if status == 404 and call.sandbox_id:
        return SandboxNotFoundException(
            f"{call.subject} not found: it was killed or its timeout expired ({message}); "
            "create a new sandbox")
    if status == 404:
        return NotFoundException(f"{call.subject}: not found ({message})")
    if status == 400:
        return InvalidArgumentException(f"{call.subject}: {message}")
    if status == 409:
        return ConflictException(f"{call.subject}: {message}")
    if status in (502, 504):
        return TimeoutException(f"{call.subject}: the server timed out ({message}); retry later")
    return SandboxException(f"{call.subject}: HTTP {status}: {message}")


def _proxy_error(call: Call, message: str) -> SandboxException:
    lowered = message.lower()
    if "not found" in lowered:
        return SandboxNotFoundException(
            f"{call.subject}: the sandbox was not found ({message}); "
            "it was killed or its timeout expired")
    if "port" in lowered:
        return SandboxException(
            f"{call.subject}: {message}; is the server inside the sandbox running?")
    return TimeoutException(f"{call.subject}: the sandbox is not reachable ({message}); "
                            "it may have timed out: extend it with set_timeout()")


def closed_error(call: Call, killed: bool, sandbox_id: str) -> SandboxException:
    """The error for a call made through a Sandbox object after its kill() or close()."""
    if killed:
        return SandboxNotFoundException(
            f"{call.subject}: sandbox {sandbox_id} was killed with kill(); create a new sandbox")
    return SandboxClosedException(
        f"{call.subject}: this Sandbox object was closed with close(); the sandbox may still "
        f"run: Sandbox.connect({sandbox_id!r}) to use it again")


def moved_daemon(config: ConnectionConfig, call: Call, error: SandboxException) -> bool:
    """True (with `call.url` pointing at the new address) if `error` is a failed connect to a
    discovered local daemon that has since moved: the call is safe to send again."""
    if not isinstance(error.__cause__, httpx.ConnectError):
        return False
    old = config.api_url
    if not call.url.startswith(old) or not follow_moved_daemon(config):
        return False
    call.url = config.api_url + call.url[len(old):]
    return True


def follow_daemon_address(config: ConnectionConfig, call: Call) -> None:
    """Points `call` at the discovered local daemon's current address before it is sent."""
    old = config.api_url
    if call.url.startswith(old) and notice_moved_daemon(config):
        call.url = config.api_url + call.url[len(old):]


@contextlib.contextmanager
def transport_errors(call: Call) -> Iterator[None]:
    """Turns httpx's network failures into SDK errors that say what to do."""
    try:
        yield
    except httpx.TimeoutException as error:
        raise TimeoutException(
            f"{call.subject}: no answer from {call.url} in time ({type(error).__name__}); "
            "pass a larger timeout= or request_timeout=") from error
    except httpx.ConnectError as error:
        raise SandboxException(f"{call.subject}: cannot connect to {call.url} ({error}); is the "
                               "server running? (local: `abx daemon start`)") from error
    except httpx.TransportError as error:
        raise SandboxException(
            f"{call.subject}: connection to {call.url} failed ({error})") from error
