"""Agent Sandbox client: disposable Linux sandboxes for AI agents' code, over E2B's protocol.

    async with await Sandbox.create(template="base") as sandbox:
        result = await sandbox.run_code("print(1 + 1)")

The blocking twin with the same names is `agent_sandbox.sync`.
"""

from pkgutil import extend_path
from typing import Any

# `agent_sandbox.server` comes from another distribution (agent-sandbox-server): look for it
# in every `agent_sandbox` directory on sys.path (editable installs keep them apart).
__path__ = extend_path(__path__, __name__)

from ._server_ops import ProcessResult
from ._version import __version__
from .commands import CommandHandle, Commands
from .errors import (
    AlreadyExistsError,
    AlreadyExistsException,
    AuthenticationError,
    AuthenticationException,
    CommandExitException,
    ConflictException,
    InvalidArgumentError,
    InvalidArgumentException,
    NotFoundError,
    NotFoundException,
    RateLimitError,
    RateLimitException,
    SandboxClosedException,
    SandboxException,
    SandboxNotFound,
    SandboxNotFoundException,
    TemplateBuildError,
    TemplateBuildException,
    TimeoutException,
    UnsupportedError,
    UnsupportedException,
    deprecated_attribute,
)
from .filesystem import Filesystem, WatchHandle
from .models import (
    CommandResult,
    Context,
    EntryInfo,
    Execution,
    ExecutionError,
    FileChange,
    FileChanges,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    Logs,
    ProcessInfo,
    Result,
    SandboxInfo,
    SandboxMetrics,
    SandboxQuery,
    SnapshotInfo,
    WriteEntry,
    WriteInfo,
)
from .provider import ProviderSandbox
from .sandbox import Sandbox
from .template import Template, TemplateInfo

__all__ = [
    "AlreadyExistsError", "AlreadyExistsException", "AuthenticationError", "ConflictException",
    "AuthenticationException", "CommandExitException", "CommandHandle", "CommandResult",
    "Commands", "Context", "EntryInfo", "Execution", "ExecutionError", "FileChange", "FileChanges",
    "FileType", "Filesystem",
    "FilesystemEvent", "FilesystemEventType", "InvalidArgumentError", "InvalidArgumentException",
    "Logs", "NotFoundError", "NotFoundException", "ProcessInfo", "ProcessResult",
    "ProviderSandbox", "RateLimitError",
    "RateLimitException", "Result", "Sandbox", "SandboxClosedException", "SandboxException",
    "SandboxInfo", "SandboxMetrics", "SandboxNotFound", "SandboxNotFoundException",
    "SandboxQuery", "SnapshotInfo", "Template", "TemplateBuildError", "TemplateBuildException",
    "TemplateInfo",
    "TimeoutException", "UnsupportedError", "UnsupportedException", "WatchHandle", "WriteEntry",
    "WriteInfo", "__version__",
]


def __getattr__(name: str) -> Any:
    """`agent_sandbox.TimeoutError`: the old name of TimeoutException, with a warning."""
    return deprecated_attribute(__name__, name)
