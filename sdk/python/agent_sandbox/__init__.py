"""Agent Sandbox client: disposable Linux sandboxes for AI agents' code, over E2B's protocol.

    async with await Sandbox.create(template="base") as sandbox:
        result = await sandbox.run_code("print(1 + 1)")

The blocking twin with the same names is `agent_sandbox.sync`.
"""

from .commands import CommandHandle, Commands
from .errors import (
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
from .filesystem import Filesystem, WatchHandle
from .models import (
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
from .sandbox import Sandbox
from .template import Template, TemplateBuildError, TemplateInfo

__all__ = [
    "AlreadyExistsError", "AuthenticationError", "CommandExitException", "CommandHandle",
    "CommandResult", "Commands", "Context", "EntryInfo", "Execution", "ExecutionError",
    "FileType", "Filesystem", "FilesystemEvent", "FilesystemEventType", "InvalidArgumentError",
    "Logs", "NotFoundError", "ProcessInfo", "RateLimitError", "Result", "Sandbox",
    "SandboxException", "SandboxInfo", "SandboxNotFound", "SandboxQuery", "Template",
    "TemplateBuildError", "TemplateInfo", "TimeoutError",
    "UnsupportedError", "WatchHandle", "WriteEntry", "WriteInfo",
]
