"""Typed errors raised by the SDK; every one is a `SandboxException`.

Names follow E2B's SDK (`...Exception`). The older `...Error` names and `SandboxNotFound`
stay as aliases of the same classes, so existing `except` clauses keep working.
`TimeoutError` is no longer exported by `from agent_sandbox import *` (it shadowed the
builtin); `agent_sandbox.TimeoutError` still resolves, with a DeprecationWarning.
"""

from __future__ import annotations

import builtins

from .models import CommandResult


class SandboxException(Exception):
    """Base class of every error the SDK raises."""


class SandboxNotFoundException(SandboxException):
    """The sandbox does not exist (never created, killed, or its timeout expired)."""


class SandboxClosedException(SandboxException):
    """This `Sandbox` object was closed with `close()`; `Sandbox.connect(id)` reopens one."""


class AuthenticationException(SandboxException):
    """The server rejected the API key or the sandbox access token."""


class TimeoutException(SandboxException, builtins.TimeoutError):
    """A deadline passed: the request's, the command's, or the sandbox's.

    Also a builtin `TimeoutError`, so `except TimeoutError:` catches it.
    """


class NotFoundException(SandboxException):
    """A file, directory, process, code context or template does not exist."""


class RateLimitException(SandboxException):
    """The server kept answering 429 Too Many Requests after the SDK's retries."""


class InvalidArgumentException(SandboxException, ValueError):
    """The request (or the SDK's configuration) is malformed."""


class UnsupportedException(SandboxException):
    """The server does not implement the called method."""


class AlreadyExistsException(SandboxException):
    """The path (or object) to create already exists."""


class ConflictException(SandboxException):
    """The sandbox is in a state that refuses the call now (a pause or resume under way)."""


class TemplateBuildException(SandboxException):
    """A template build failed; the message holds the failing step and its last output lines."""


class CommandExitException(SandboxException, CommandResult):
    """A command exited with a non-zero code (raised when `check=True`).

    As E2B's, it is also the command's `CommandResult`: `stdout`, `stderr` (all of each),
    `exit_code` and `error`. Its message gives the code and the end of stderr (its last
    `STDERR_TAIL_LINES` lines, at most `STDERR_TAIL_CHARS` characters).
    """

    STDERR_TAIL_LINES = 10
    STDERR_TAIL_CHARS = 2000

    def __init__(self, stdout: str, stderr: str, exit_code: int, error: str | None) -> None:
        CommandResult.__init__(self, stdout, stderr, exit_code, error)
        SandboxException.__init__(self, self._message())

    # The dataclass's field-wise __eq__ would make the exception unhashable; an exception is
    # itself, compared and hashed by identity.
    __eq__ = SandboxException.__eq__
    __hash__ = SandboxException.__hash__

    def __reduce__(self) -> tuple[type[CommandExitException], tuple[str, str, int, str | None]]:
        return type(self), (self.stdout, self.stderr, self.exit_code, self.error)

    def _message(self) -> str:
        head = f"command exited with code {self.exit_code}"
        if self.error:
            head += f": {self.error}"
        tail = self.stderr_tail()
        return f"{head}; stderr ends with:\n{tail}" if tail else head

    def stderr_tail(self) -> str:
        """The last lines of stderr, as the message shows them ("" without stderr)."""
        lines = self.stderr.rstrip().splitlines()[-self.STDERR_TAIL_LINES:]
        tail = "\n".join(lines)
        if len(tail) > self.STDERR_TAIL_CHARS:
            tail = "..." + tail[-self.STDERR_TAIL_CHARS:]
        return tail


# Older names, kept so that code written against them keeps working.
SandboxNotFound = SandboxNotFoundException
AuthenticationError = AuthenticationException
NotFoundError = NotFoundException
RateLimitError = RateLimitException
InvalidArgumentError = InvalidArgumentException
UnsupportedError = UnsupportedException
AlreadyExistsError = AlreadyExistsException
TemplateBuildError = TemplateBuildException

DEPRECATED_NAMES = {"TimeoutError": TimeoutException}
"""Old names that are only reachable as attributes (with a DeprecationWarning)."""


def deprecated_attribute(module: str, name: str) -> type[SandboxException]:
    """Module `__getattr__` body: the class behind a deprecated name, with a warning."""
    import warnings

    if name not in DEPRECATED_NAMES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} is deprecated (it shadows the builtin): use "
                  "TimeoutException", DeprecationWarning, stacklevel=3)
    return DEPRECATED_NAMES[name]
