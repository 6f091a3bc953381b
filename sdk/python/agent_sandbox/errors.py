"""Typed errors raised by the SDK; every one is a `SandboxException`."""

from __future__ import annotations

import builtins


class SandboxException(Exception):
    """Base class of every error the SDK raises."""


class SandboxNotFound(SandboxException):
    """The sandbox does not exist (never created, killed, or its timeout expired)."""


class AuthenticationError(SandboxException):
    """The server rejected the API key or the sandbox access token."""


class TimeoutError(SandboxException, builtins.TimeoutError):
    """A deadline passed: the request's, the command's, or the sandbox's."""


class NotFoundError(SandboxException):
    """A file, directory, process or code context does not exist."""


class RateLimitError(SandboxException):
    """The server kept answering 429 Too Many Requests after the SDK's retries."""


class InvalidArgumentError(SandboxException, ValueError):
    """The request (or the SDK's configuration) is malformed."""


class UnsupportedError(SandboxException):
    """The server does not implement the called method."""


class CommandExitException(SandboxException):
    """A command exited with a non-zero code (raised when `check=True`)."""

    def __init__(self, stdout: str, stderr: str, exit_code: int, error: str | None) -> None:
        detail = error or (stderr.strip().splitlines()[-1] if stderr.strip() else "")
        suffix = f": {detail}" if detail else ""
        super().__init__(f"command exited with code {exit_code}{suffix}")
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.error = error


class AlreadyExistsError(SandboxException):
    """The path (or object) to create already exists."""
