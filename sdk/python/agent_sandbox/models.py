"""Plain data returned by (or given to) the SDK: no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import IO, Any, Union

FileData = Union[str, bytes, IO[bytes], IO[str]]
"""What `files.write` accepts: text, bytes, or a file-like object (streamed)."""


@dataclass
class SandboxInfo:
    """A sandbox as the control plane describes it."""

    sandbox_id: str
    template_id: str
    name: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    end_at: datetime | None = None
    state: str = "running"
    cpu_count: int | None = None
    memory_mb: int | None = None
    envd_version: str | None = None
    allow_internet_access: bool | None = None
    """False when it was made (or updated) with allow_internet_access=False."""
    network: dict[str, Any] | None = None
    """Its network settings as asked for, in E2B's snake_case shape (`allow_out`, `deny_out`,
    `rules`, `egress_proxy`, `dns_servers`, `allow_public_traffic`, ...): a rule header's value
    shows its `abx-secret:NAME` reference or "[hidden]", never a literal value; the egress
    proxy's username shows as "[hidden]" and its password is left out."""


@dataclass
class FileChange:
    """One path a sandbox changed on top of its template (`Sandbox.diff`)."""

    path: str
    kind: str
    """"file", "dir", "symlink" or "other"."""
    change: str
    """"added", "changed" or "deleted"."""
    size: int = 0


@dataclass
class FileChanges:
    """What a sandbox changed on top of its template, like `docker diff`."""

    changes: list[FileChange] = field(default_factory=list)
    truncated: bool = False
    """True when the sandbox changed more than one diff lists."""


@dataclass
class SandboxEvent:
    """One entry of a sandbox's flight record (`Sandbox.events`), oldest first by `seq`."""

    seq: int
    """Its place in the sandbox's record: pass it as `since=` to get only later events."""
    at: datetime
    """When it happened (UTC)."""
    type: str
    """"lifecycle", "commands", "files" or "network"."""
    event: str
    """What happened, e.g. "created", "started", "ended", "uploaded"."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Its details as the daemon records them (`argv`, `exitCode`, `path`, `bytes`, ...: see
    the events route in spec/daemon-api.md); environment values are never recorded."""


@dataclass
class SnapshotInfo:
    """A snapshot of a sandbox's files (E2B's `SnapshotInfo`): `Sandbox.create(snapshot_id)`
    starts new sandboxes on it. Memory and processes are not part of it."""

    snapshot_id: str
    names: list[str] = field(default_factory=list)
    sandbox_id: str | None = None
    """The sandbox it was taken of."""
    template_id: str | None = None
    """The template that sandbox was made from."""
    created_at: datetime | None = None
    size_bytes: int = 0
    """Disk its own layer holds (what the sandbox changed over its template)."""


@dataclass
class SandboxMetrics:
    """One resource sample of a sandbox (E2B's `SandboxMetrics`); sizes are in bytes."""

    timestamp: datetime
    cpu_count: int
    cpu_used_pct: float
    mem_used: int
    mem_total: int
    disk_used: int
    disk_total: int
    net_rx_bytes: int = 0
    """Bytes received since the sandbox started (ours, beyond E2B's fields)."""
    net_tx_bytes: int = 0
    """Bytes sent since the sandbox started."""


@dataclass
class SandboxQuery:
    """Filter for `Sandbox.list`: metadata must all match; state is running and/or paused."""

    metadata: dict[str, str] | None = None
    state: list[str] | None = None


class FileType(str, Enum):
    """Kind of a filesystem entry."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    UNKNOWN = "unknown"


@dataclass
class EntryInfo:
    """A file, directory or symlink inside the sandbox."""

    name: str
    path: str
    type: FileType
    size: int = 0
    mode: int = 0
    permissions: str = ""
    owner: str = ""
    group: str = ""
    modified_time: datetime | None = None
    symlink_target: str | None = None


@dataclass
class WriteInfo:
    """A file that `files.write` created or replaced."""

    name: str
    path: str
    type: FileType = FileType.FILE


@dataclass
class WriteEntry:
    """One file of a multi-file `files.write`."""

    path: str
    data: FileData


class FilesystemEventType(str, Enum):
    """What happened to a watched path."""

    CREATE = "create"
    WRITE = "write"
    REMOVE = "remove"
    RENAME = "rename"
    CHMOD = "chmod"


@dataclass
class FilesystemEvent:
    """A change inside a watched directory; `name` is relative to it."""

    name: str
    type: FilesystemEventType


@dataclass
class CommandResult:
    """Output and exit status of a finished command."""

    stdout: str
    stderr: str
    exit_code: int
    error: str | None = None


@dataclass
class ProcessInfo:
    """A process started through `commands` that is still running."""

    pid: int
    cmd: str
    args: list[str] = field(default_factory=list)
    envs: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    tag: str | None = None


@dataclass
class Context:
    """A stateful code-interpreter context (one interpreter process)."""

    id: str
    language: str
    cwd: str


@dataclass
class Logs:
    """Chunks the code printed, in order."""

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


@dataclass
class ExecutionError:
    """An uncaught exception raised by executed code."""

    name: str
    value: str
    traceback: str


_RESULT_FORMATS = ("text", "html", "markdown", "svg", "png", "jpeg", "pdf", "latex", "json",
                   "javascript", "data", "chart")


@dataclass
class Result:
    """A rich value produced by executed code (last expression or a display call)."""

    text: str | None = None
    html: str | None = None
    markdown: str | None = None
    svg: str | None = None
    png: str | None = None
    jpeg: str | None = None
    pdf: str | None = None
    latex: str | None = None
    json: Any | None = None
    javascript: str | None = None
    data: Any | None = None
    chart: Any | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    is_main_result: bool = False

    def formats(self) -> list[str]:
        """Names of the formats this result carries (e.g. ["text", "png"])."""
        present = [name for name in _RESULT_FORMATS if getattr(self, name) is not None]
        return present + list(self.extra)

    @classmethod
    def from_json(cls, line: dict[str, Any]) -> Result:
        """Builds a result from an NDJSON `result` line."""
        known = {name: line[name] for name in _RESULT_FORMATS if name in line}
        ignored = set(_RESULT_FORMATS) | {"type", "is_main_result", "extra"}
        extra = dict(line.get("extra") or {})
        extra.update({k: v for k, v in line.items() if k not in ignored})
        return cls(**known, extra=extra, is_main_result=bool(line.get("is_main_result")))


@dataclass
class Execution:
    """Everything one `run_code` call produced."""

    results: list[Result] = field(default_factory=list)
    logs: Logs = field(default_factory=Logs)
    error: ExecutionError | None = None
    execution_count: int | None = None

    @property
    def stdout(self) -> str:
        """All stdout text, joined."""
        return "".join(self.logs.stdout)

    @property
    def stderr(self) -> str:
        """All stderr text, joined."""
        return "".join(self.logs.stderr)

    @property
    def main_result(self) -> Result | None:
        """The value of the last expression, if it had one."""
        return next((r for r in self.results if r.is_main_result), None)

    @property
    def text(self) -> str:
        """What the code printed to stdout, then the text of the main result (if any)."""
        main = self.main_result
        if main is None or main.text is None:
            return self.stdout
        printed = self.stdout
        if printed and not printed.endswith("\n"):
            printed += "\n"
        return printed + main.text

    @property
    def exit_code(self) -> int:
        """0 on success, 1 after an uncaught exception, the code given to `sys.exit`."""
        if self.error is None:
            return 0
        if self.error.name == "SystemExit":
            value = self.error.value.strip()
            if value in ("", "None"):
                return 0
            try:
                return int(value)
            except ValueError:
                return 1
        return 1
