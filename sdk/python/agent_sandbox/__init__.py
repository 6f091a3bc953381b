"""Agent Sandbox client: disposable Linux sandboxes for AI agents' code, over E2B's protocol.

    from agent_sandbox import AsyncSandbox

    async with await AsyncSandbox.create(template="base") as sandbox:
        result = await sandbox.run_code("print(1 + 1)")

Names follow E2B's SDK: `AsyncSandbox` is the async class, `agent_sandbox.sync.Sandbox` the
blocking one (same methods, no `await`).

`agent_sandbox.Sandbox` is the old name of `AsyncSandbox`. It still works, with a
PendingDeprecationWarning (a DeprecationWarning from 0.2); in 1.0 it becomes the
blocking class, as `e2b.Sandbox` is. Import
`AsyncSandbox` (async code) or `agent_sandbox.sync.Sandbox` (blocking code) to be unaffected.
"""

from pkgutil import extend_path
from typing import TYPE_CHECKING, Any

# `agent_sandbox.server` comes from another distribution (agent-sandbox-server): look for it
# in every `agent_sandbox` directory on sys.path (editable installs keep them apart).
__path__ = extend_path(__path__, __name__)

from ._network import ALL_TRAFFIC, NetworkSelectorContext
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
    SandboxEvent,
    SandboxInfo,
    SandboxMetrics,
    SandboxQuery,
    SnapshotInfo,
    WriteEntry,
    WriteInfo,
)
from .provider import ProviderSandbox
from .sandbox import AsyncSandbox
from .template import Template, TemplateInfo

if TYPE_CHECKING:  # type checkers see the old name's class; at run time __getattr__ warns
    from .sandbox import AsyncSandbox as Sandbox  # noqa: F401

__all__ = [
    "ALL_TRAFFIC", "NetworkSelectorContext",
    "AlreadyExistsError", "AlreadyExistsException", "AsyncSandbox", "AuthenticationError",
    "ConflictException",
    "AuthenticationException", "CommandExitException", "CommandHandle", "CommandResult",
    "Commands", "Context", "EntryInfo", "Execution", "ExecutionError", "FileChange", "FileChanges",
    "FileType", "Filesystem",
    "FilesystemEvent", "FilesystemEventType", "InvalidArgumentError", "InvalidArgumentException",
    "Logs", "NotFoundError", "NotFoundException", "ProcessInfo", "ProcessResult",
    "ProviderSandbox", "RateLimitError",
    "RateLimitException", "Result", "Sandbox", "SandboxClosedException", "SandboxEvent",
    "SandboxException", "SandboxInfo", "SandboxMetrics", "SandboxNotFound",
    "SandboxNotFoundException",
    "SandboxQuery", "SnapshotInfo", "Template", "TemplateBuildError", "TemplateBuildException",
    "TemplateInfo",
    "TimeoutException", "UnsupportedError", "UnsupportedException", "WatchHandle", "WriteEntry",
    "WriteInfo", "__version__",
]


def __getattr__(name: str) -> Any:
    """Old names: `Sandbox` (now `AsyncSandbox`, with a PendingDeprecationWarning: the seed
    example still uses it, and a plain run shows none) and `TimeoutError` (now
    `TimeoutException`, with a DeprecationWarning)."""
    if name == "Sandbox":
        import warnings

        # stacklevel 2 is the importing line: warnings skips importlib's own frames.
        warnings.warn("agent_sandbox.Sandbox is deprecated: it is the async class, which is now "
                      "agent_sandbox.AsyncSandbox (E2B's name); the blocking class is "
                      "agent_sandbox.sync.Sandbox. In agent_sandbox 1.0, agent_sandbox.Sandbox "
                      "becomes the blocking class.", PendingDeprecationWarning, stacklevel=2)
        return AsyncSandbox
    return deprecated_attribute(__name__, name)
