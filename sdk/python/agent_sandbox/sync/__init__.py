"""The blocking twin of `agent_sandbox`: same names, no `await`.

    with Sandbox.create(template="base") as sandbox:
        print(sandbox.run_code("1 + 1").text)
"""

from ..errors import (
    AlreadyExistsError,
    AuthenticationError,
    CommandExitException,
    InvalidArgumentError,
    NotFoundError,
    RateLimitError,
    SandboxException,
    SandboxNotFound,
    TimeoutError,
    UnsupportedError,
)
from ..models import (
    CommandResult,
    Context,
    EntryInfo,
    Execution,
    ExecutionError,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    Logs,
    ProcessInfo,
    Result,
    SandboxInfo,
    SandboxQuery,
    WriteEntry,
    WriteInfo,
)
from .commands import CommandHandle, Commands
from .filesystem import Filesystem, WatchHandle
from .sandbox import Sandbox

__all__ = [
    "AlreadyExistsError", "AuthenticationError", "CommandExitException", "CommandHandle",
    "CommandResult", "Commands", "Context", "EntryInfo", "Execution", "ExecutionError",
    "FileType", "Filesystem", "FilesystemEvent", "FilesystemEventType", "InvalidArgumentError",
    "Logs", "NotFoundError", "ProcessInfo", "RateLimitError", "Result", "Sandbox",
    "SandboxException", "SandboxInfo", "SandboxNotFound", "SandboxQuery", "TimeoutError",
    "UnsupportedError", "WatchHandle", "WriteEntry", "WriteInfo",
]
