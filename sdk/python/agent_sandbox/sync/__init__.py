"""The blocking client: `Sandbox` here is E2B's `Sandbox` (no `await`).

    from agent_sandbox.sync import Sandbox

    with Sandbox.create(template="base") as sandbox:
        print(sandbox.run_code("1 + 1").text)

The async class with the same methods is `agent_sandbox.AsyncSandbox`.
"""

from typing import Any

from .._network import ALL_TRAFFIC, NetworkSelectorContext
from .._server_ops import ProcessResult
from .._version import __version__
from ..errors import (
    AlreadyExistsError,
    AlreadyExistsException,
    AuthenticationError,
    AuthenticationException,
    CommandExitException,
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
    SandboxEvent,
    SandboxInfo,
    SandboxMetrics,
    SandboxQuery,
    WriteEntry,
    WriteInfo,
)
from ..template import TemplateInfo
from .commands import CommandHandle, Commands
from .filesystem import Filesystem, WatchHandle
from .provider import ProviderSandbox
from .sandbox import Sandbox
from .template import Template

__all__ = [
    "ALL_TRAFFIC", "NetworkSelectorContext",
    "AlreadyExistsError", "AlreadyExistsException", "AuthenticationError",
    "AuthenticationException", "CommandExitException", "CommandHandle", "CommandResult",
    "Commands", "Context", "EntryInfo", "Execution", "ExecutionError", "FileType", "Filesystem",
    "FilesystemEvent", "FilesystemEventType", "InvalidArgumentError", "InvalidArgumentException",
    "Logs", "NotFoundError", "NotFoundException", "ProcessInfo", "ProcessResult",
    "ProviderSandbox", "RateLimitError",
    "RateLimitException", "Result", "Sandbox", "SandboxClosedException", "SandboxEvent",
    "SandboxException", "SandboxInfo", "SandboxMetrics", "SandboxNotFound",
    "SandboxNotFoundException",
    "SandboxQuery", "Template", "TemplateBuildError", "TemplateBuildException", "TemplateInfo",
    "TimeoutException", "UnsupportedError", "UnsupportedException", "WatchHandle", "WriteEntry",
    "WriteInfo", "__version__",
]


def __getattr__(name: str) -> Any:
    """`agent_sandbox.sync.TimeoutError`: the old name of TimeoutException, with a warning."""
    return deprecated_attribute(__name__, name)
