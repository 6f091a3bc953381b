"""Every SDK operation, written once as a generator that yields `Call`s and receives responses.

The async and sync clients drive these generators with their own HTTP client, so
request building, parsing and error handling exist in one place.
"""

from __future__ import annotations

import base64
import io
import json as json_module
import posixpath
import urllib.parse
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import httpx

from ._config import ENVD_PORT, JUPYTER_PORT, ConnectionConfig, sandbox_headers
from ._connect import encode_envelope
from ._http import Call, error_from_response
from ._network import network_info
from .errors import (
    AlreadyExistsException,
    ConflictException,
    InvalidArgumentException,
    NotFoundException,
    SandboxNotFoundException,
    UnsupportedException,
)
from .models import (
    Context,
    EntryInfo,
    FileChange,
    FileChanges,
    FileData,
    FilesystemEvent,
    FilesystemEventType,
    FileType,
    ProcessInfo,
    SandboxEvent,
    SandboxInfo,
    SandboxMetrics,
    SandboxQuery,
    SnapshotInfo,
    WriteEntry,
    WriteInfo,
)

T = TypeVar("T")
Op = Generator[Call, httpx.Response, T]
"""An operation: yields requests, gets each one's (successful) response, returns a value."""

KEEPALIVE_SECONDS = 30
LIST_PAGE_SIZE = 100
DEFAULT_USER = "user"


@dataclass
class Target:
    """One sandbox as seen by the client: where to reach it and with what token."""

    config: ConnectionConfig
    sandbox_id: str
    access_token: str | None = None
    envd_version: str | None = None
    domain: str | None = None

    def url(self, port: int, path: str) -> str:
        """Absolute URL of `path` on `port` inside the sandbox."""
        return self.config.sandbox_url(self.sandbox_id, port, self.domain) + path

    def headers(self, port: int, user: str | None = None) -> dict[str, str]:
        """Routing, access-token and (optional) user headers for `port`."""
        headers = sandbox_headers(self.sandbox_id, port, self.access_token)
        if not self.access_token and self.config.api_key:
            # Made with secure=False: the team's key is the sandbox's credential.
            headers["X-API-KEY"] = self.config.api_key
        if user:
            token = base64.b64encode(f"{user}:".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        return headers


def host_of(target: Target, port: int) -> str:
    """`{port}-{id}.{domain}`: the domain from the create response, the configured one, or
    the API's own host and port (a local daemon routes on the Host header; names under
    `localhost` reach loopback in browsers and curl, a bare IP cannot take the prefix)."""
    domain = target.domain or target.config.domain
    if not domain:
        api = urllib.parse.urlsplit(target.config.api_url)
        host = "localhost" if api.hostname in ("127.0.0.1", "::1") else api.hostname
        domain = f"{host}:{api.port}" if api.port else str(host)
    for prefix in ("http://", "https://"):
        domain = domain.removeprefix(prefix)
    return f"{port}-{target.sandbox_id}.{domain}"


def absolute_path(path: str, user: str | None = None) -> str:
    """Resolves a path relative to the user's home, as a shell in the sandbox would."""
    if path.startswith("/"):
        return path
    home = "/root" if user == "root" else f"/home/{user or DEFAULT_USER}"
    return posixpath.normpath(posixpath.join(home, path))


# ---------------------------------------------------------------- control plane


def _control(config: ConnectionConfig, method: str, path: str, subject: str, **kwargs: Any) -> Call:
    return Call(method, config.api_url + path, "control", subject, headers=config.control_headers(),
                **kwargs)


def _about(config: ConnectionConfig, method: str, sandbox_id: str, path: str = "",
           **kwargs: Any) -> Call:
    """A control-plane call on /sandboxes/{id}{path}."""
    return _control(config, method, f"/sandboxes/{sandbox_id}{path}", f"sandbox {sandbox_id}",
                    sandbox_id=sandbox_id, **kwargs)


def resources(cpu_count: int | None, memory_mb: int | None,
              disk_mb: int | None) -> dict[str, int]:
    """The create body's limits (the daemon's defaults where None): whole numbers above 0."""
    out: dict[str, int] = {}
    for field, name, value in (("cpuCount", "cpu_count", cpu_count),
                               ("memoryMB", "memory_mb", memory_mb),
                               ("diskSizeMB", "disk_mb", disk_mb)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentException(f"{name} must be a whole number above 0, not {value!r}")
        out[field] = value
    return out


def create_sandbox(config: ConnectionConfig, template: str, timeout: int,
                   envs: dict[str, str] | None, metadata: dict[str, str] | None,
                   allow_internet_access: bool,
                   limits: dict[str, int] | None = None,
                   network: dict[str, Any] | None = None,
                   volume_mounts: dict[str, str] | None = None) -> Op[Target]:
    """POST /sandboxes; the response's envdAccessToken authorizes the sandbox plane.

    `network` is the API's JSON (`_network.create_network`); `volume_mounts` maps a path in
    the sandbox to the name of one of the team's volumes (E2B's volumeMounts)."""
    body = {"templateID": template, "timeout": timeout, "secure": True,
            "allow_internet_access": allow_internet_access,
            "metadata": metadata or {}, "envVars": envs or {}, **(limits or {})}
    if network is not None:
        body["network"] = network
    if volume_mounts:
        body["volumeMounts"] = [{"name": name, "path": path}
                                for path, name in volume_mounts.items()]
    response = yield _control(config, "POST", "/sandboxes", f"create sandbox from {template!r}",
                              json=body)
    return _target_from(config, response.json())


def connect_sandbox(config: ConnectionConfig, sandbox_id: str, timeout: int) -> Op[Target]:
    """POST /sandboxes/{id}/connect: resumes a paused sandbox, extends the TTL of a running one."""
    response = yield _about(config, "POST", sandbox_id, "/connect", json={"timeout": timeout})
    return _target_from(config, response.json())


def _target_from(config: ConnectionConfig, body: dict[str, Any]) -> Target:
    return Target(config, body["sandboxID"], body.get("envdAccessToken"), body.get("envdVersion"),
                  body.get("domain"))


def kill_sandbox(config: ConnectionConfig, sandbox_id: str) -> Op[bool]:
    """DELETE /sandboxes/{id}; False if it did not exist."""
    try:
        yield _about(config, "DELETE", sandbox_id)
    except SandboxNotFoundException:
        return False
    return True


def update_network(config: ConnectionConfig, sandbox_id: str, body: dict[str, Any]) -> Op[None]:
    """PUT /sandboxes/{id}/network: `body` (`_network.update_network`) replaces every egress
    setting; connections the new settings forbid are cut."""
    yield _about(config, "PUT", sandbox_id, "/network", json=body)


def set_timeout(config: ConnectionConfig, sandbox_id: str, seconds: int) -> Op[None]:
    """POST /sandboxes/{id}/timeout: the sandbox now ends `seconds` from now."""
    yield _about(config, "POST", sandbox_id, "/timeout", json={"timeout": seconds})


def pause_sandbox(config: ConnectionConfig, sandbox_id: str, keep_memory: bool = True) -> Op[bool]:
    """POST /sandboxes/{id}/pause ({"memory": false}: files only); False if already paused."""
    body = None if keep_memory else {"memory": False}
    try:
        yield _about(config, "POST", sandbox_id, "/pause", json=body)
    except ConflictException:
        info = yield from get_info(config, sandbox_id)
        if info.state == "paused":
            return False
        raise
    return True


def resume_sandbox(config: ConnectionConfig, sandbox_id: str, timeout: int) -> Op[bool]:
    """POST /sandboxes/{id}/resume, to end `timeout` seconds from now; False if it was running."""
    try:
        yield _about(config, "POST", sandbox_id, "/resume", json={"timeout": timeout})
    except ConflictException:
        info = yield from get_info(config, sandbox_id)
        if info.state == "running":
            return False
        raise
    return True


def create_snapshot(config: ConnectionConfig, sandbox_id: str,
                    name: str | None) -> Op[SnapshotInfo]:
    """POST /sandboxes/{id}/snapshots: the sandbox's files, while it goes on running."""
    response = yield _about(config, "POST", sandbox_id, "/snapshots",
                            json={"name": name} if name else {})
    return snapshot_info(response.json())


def sandbox_diff(config: ConnectionConfig, sandbox_id: str) -> Op[FileChanges]:
    """GET /abx/v1/sandboxes/{id}/diff (our extension): the writable layer against the template."""
    response = yield _control(config, "GET", f"/abx/v1/sandboxes/{sandbox_id}/diff",
                              f"sandbox {sandbox_id}", sandbox_id=sandbox_id)
    body = response.json()
    return FileChanges([FileChange(c["path"], c["kind"], c["change"], c.get("size", 0))
                        for c in body.get("changes", [])], bool(body.get("truncated", False)))


EVENTS_KEEPALIVE_SECONDS = 15
"""How often the daemon sends a comment on a followed event stream when nothing happens."""


def events_call(config: ConnectionConfig, sandbox_id: str, event_type: str | None,
                since: int | None, follow: bool = False) -> Call:
    """GET /abx/v1/sandboxes/{id}/events[?type=&since=&follow=1] (our extension): the
    sandbox's flight record, which only the local abx daemon keeps. The daemon checks
    `type` and `since` (400: InvalidArgumentException), so new types need no SDK release."""
    if config.provider != "local":
        raise UnsupportedException(
            f"sandbox {sandbox_id}: events are recorded by the local abx daemon only; "
            f"provider {config.provider!r} has no flight record")
    params: dict[str, Any] = {name: value for name, value in
                              (("type", event_type), ("since", since)) if value is not None}
    timeout = None
    if follow:
        params["follow"] = "1"
        # Quiet sandboxes are normal: only a stream silent for several keepalives is dead.
        timeout = httpx.Timeout(config.request_timeout, read=max(config.request_timeout,
                                                                 4 * EVENTS_KEEPALIVE_SECONDS))
    return _control(config, "GET", f"/abx/v1/sandboxes/{sandbox_id}/events",
                    f"sandbox {sandbox_id}", sandbox_id=sandbox_id, params=params or None,
                    timeout=timeout)


def sandbox_events(config: ConnectionConfig, sandbox_id: str, event_type: str | None,
                   since: int | None) -> Op[list[SandboxEvent]]:
    """The flight record so far (JSON lines), oldest first."""
    response = yield events_call(config, sandbox_id, event_type, since)
    return [sandbox_event(json_module.loads(line)) for line in response.text.splitlines()
            if line.strip()]


_EVENT_HEAD = ("seq", "at", "type", "event")


def sandbox_event(body: dict[str, Any]) -> SandboxEvent:
    """SandboxEvent from one recorded event (`at` in unix milliseconds)."""
    return SandboxEvent(seq=int(body.get("seq") or 0),
                        at=datetime.fromtimestamp(int(body.get("at") or 0) / 1000, timezone.utc),
                        type=str(body.get("type", "")), event=str(body.get("event", "")),
                        fields={k: v for k, v in body.items() if k not in _EVENT_HEAD})


def list_snapshots(config: ConnectionConfig, sandbox_id: str | None) -> Op[list[SnapshotInfo]]:
    """GET /snapshots[?sandboxID=], every page (X-Next-Token)."""
    params: dict[str, Any] = {"limit": 1000}
    if sandbox_id:
        params["sandboxID"] = sandbox_id
    found: list[SnapshotInfo] = []
    while True:
        response = yield _control(config, "GET", "/snapshots", "list snapshots",
                                  params=dict(params))
        found.extend(snapshot_info(item) for item in response.json())
        token = response.headers.get("x-next-token")
        if not token:
            return found
        params["nextToken"] = token


def delete_snapshot(config: ConnectionConfig, snapshot_id: str) -> Op[bool]:
    """DELETE /templates/{snapshotID} (E2B's route); False if there was no such snapshot."""
    try:
        yield _control(config, "DELETE", f"/templates/{urllib.parse.quote(snapshot_id, safe='')}",
                       f"snapshot {snapshot_id}")
    except NotFoundException:
        return False
    return True


def fork_sandbox(config: ConnectionConfig, sandbox_id: str, count: int,
                 timeout: int | None) -> Op[list[Target | Exception]]:
    """POST /sandboxes/{id}/fork: one Target, or the error that fork met, per fork asked."""
    body: dict[str, Any] = {"count": count}
    if timeout is not None:
        body["timeout"] = timeout
    call = _about(config, "POST", sandbox_id, "/fork", json=body)
    response = yield call
    forks: list[Target | Exception] = []
    for item in response.json():
        if isinstance(item, dict) and isinstance(item.get("sandbox"), dict):
            forks.append(_target_from(config, item["sandbox"]))
            continue
        error = item.get("error") if isinstance(item, dict) else None
        status = int(error.get("code") or 500) if isinstance(error, dict) else 500
        message = str(error.get("message")) if isinstance(error, dict) else "no answer"
        forks.append(error_from_response(call, status, _error_body(status, message)))
    return forks


def _error_body(status: int, message: str) -> bytes:
    """A fork's error as the body of a failed response, for error_from_response."""
    return json_module.dumps({"code": status, "message": message}).encode()


def snapshot_info(body: dict[str, Any]) -> SnapshotInfo:
    """SnapshotInfo from a SnapshotInfo object (E2B's fields and the daemon's extra ones)."""
    return SnapshotInfo(snapshot_id=body["snapshotID"], names=list(body.get("names") or []),
                        sandbox_id=body.get("sandboxID"), template_id=body.get("templateID"),
                        created_at=parse_time(body.get("createdAt")),
                        size_bytes=int(body.get("sizeBytes") or 0))


def get_info(config: ConnectionConfig, sandbox_id: str) -> Op[SandboxInfo]:
    """GET /sandboxes/{id}."""
    response = yield _about(config, "GET", sandbox_id)
    return sandbox_info(response.json())


def _unix_seconds(when: datetime) -> int:
    return int((when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp())


def get_metrics(config: ConnectionConfig, sandbox_id: str, start: datetime | None,
                end: datetime | None) -> Op[list[SandboxMetrics]]:
    """GET /sandboxes/{id}/metrics[?start=&end=] (Unix seconds, as E2B's API takes them).

    A daemon without time ranges ignores them and answers its latest sample.
    """
    params = {name: _unix_seconds(value) for name, value in (("start", start), ("end", end))
              if value is not None}
    response = yield _about(config, "GET", sandbox_id, "/metrics", params=params or None)
    body = response.json()
    samples = body if isinstance(body, list) else [body]
    return [sandbox_metrics(item) for item in samples if isinstance(item, dict)]


def sandbox_metrics(body: dict[str, Any]) -> SandboxMetrics:
    """SandboxMetrics from a SandboxMetric object."""
    stamp = parse_time(body.get("timestamp"))
    if stamp is None:
        stamp = datetime.fromtimestamp(float(body.get("timestampUnix") or 0), timezone.utc)
    return SandboxMetrics(timestamp=stamp, cpu_count=int(body.get("cpuCount") or 0),
                          cpu_used_pct=float(body.get("cpuUsedPct") or 0.0),
                          mem_used=int(body.get("memUsed") or 0),
                          mem_total=int(body.get("memTotal") or 0),
                          disk_used=int(body.get("diskUsed") or 0),
                          disk_total=int(body.get("diskTotal") or 0),
                          net_rx_bytes=int(body.get("netRxBytes") or 0),
                          net_tx_bytes=int(body.get("netTxBytes") or 0))


def list_sandboxes(config: ConnectionConfig, query: SandboxQuery | None,
                   limit: int | None) -> Op[list[SandboxInfo]]:
    """GET /v2/sandboxes, following X-Next-Token until `limit` sandboxes or the last page."""
    params: dict[str, Any] = {"limit": min(limit or LIST_PAGE_SIZE, LIST_PAGE_SIZE)}
    if query and query.metadata:
        params["metadata"] = urllib.parse.urlencode(query.metadata)
    if query and query.state:
        params["state"] = ",".join(query.state)
    found: list[SandboxInfo] = []
    while True:
        response = yield _control(config, "GET", "/v2/sandboxes", "list sandboxes",
                                  params=dict(params))
        found.extend(sandbox_info(item) for item in response.json())
        token = response.headers.get("x-next-token")
        if not token or (limit is not None and len(found) >= limit):
            return found[:limit] if limit is not None else found
        params["nextToken"] = token


def sandbox_info(body: dict[str, Any]) -> SandboxInfo:
    """SandboxInfo from a ListedSandbox / SandboxDetail object."""
    return SandboxInfo(sandbox_id=body["sandboxID"], template_id=body.get("templateID", ""),
                       name=body.get("alias"), metadata=body.get("metadata") or {},
                       started_at=parse_time(body.get("startedAt")),
                       end_at=parse_time(body.get("endAt")), state=body.get("state", "running"),
                       cpu_count=body.get("cpuCount"), memory_mb=body.get("memoryMB"),
                       envd_version=body.get("envdVersion"),
                       allow_internet_access=body.get("allowInternetAccess"),
                       network=network_info(body.get("network")))


def parse_time(value: str | None) -> datetime | None:
    """RFC 3339 → aware datetime (nanoseconds are cut to what Python holds)."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    if "." in text:
        head, _, tail = text.partition(".")
        # The fraction is the leading digits only: an offset's digits are not part of it.
        digits = tail[:len(tail) - len(tail.lstrip("0123456789"))]
        text = f"{head}.{digits[:6].ljust(6, '0')}{tail[len(digits):]}"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


# ---------------------------------------------------------------- envd RPC


def rpc_call(target: Target, method: str, body: dict[str, Any], subject: str,
             user: str | None = None) -> Call:
    """A Connect unary call, JSON codec."""
    headers = target.headers(ENVD_PORT, user)
    headers.update({"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
    return Call("POST", target.url(ENVD_PORT, f"/{method}"), "envd", subject, headers=headers,
                json=body)


def stream_call(target: Target, method: str, body: dict[str, Any], subject: str,
                user: str | None = None, timeout_ms: int = 0) -> Call:
    """A Connect server-streaming call: one enveloped request, reads stay open."""
    headers = target.headers(ENVD_PORT, user)
    headers.update({"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
                    "Connect-Content-Encoding": "identity", "Connect-Accept-Encoding": "identity",
                    "Keepalive-Ping-Interval": str(KEEPALIVE_SECONDS)})
    if timeout_ms:
        headers["Connect-Timeout-Ms"] = str(timeout_ms)
    read = timeout_ms / 1000 + 3 * KEEPALIVE_SECONDS if timeout_ms else None
    return Call("POST", target.url(ENVD_PORT, f"/{method}"), "envd", subject, headers=headers,
                content=encode_envelope(body),
                timeout=httpx.Timeout(target.config.request_timeout, read=read))


# ---------------------------------------------------------------- files


def read_call(target: Target, path: str, user: str | None, stream: bool = False) -> Call:
    """GET /files?path=: the file's raw bytes."""
    path = absolute_path(path, user)
    params = {"path": path, **({"username": user} if user else {})}
    timeout = httpx.Timeout(target.config.request_timeout, read=None) if stream else None
    return Call("GET", target.url(ENVD_PORT, "/files"), "envd", path,
                headers=target.headers(ENVD_PORT), params=params, timeout=timeout)


def read_file(target: Target, path: str, user: str | None) -> Op[bytes]:
    """The whole file."""
    response = yield read_call(target, path, user)
    content: bytes = response.content
    return content


class _TextAsBytes:
    """Lets a text-mode file be uploaded in chunks: httpx wants binary readers."""

    def __init__(self, text_file: Any) -> None:
        self._file = text_file

    def read(self, size: int = -1) -> bytes:
        text: str = self._file.read(size)
        return text.encode()


def _upload_part(path: str, data: FileData) -> tuple[str, tuple[str, Any, str]]:
    body: Any = data
    if isinstance(data, str):
        body = data.encode()
    elif isinstance(data, io.TextIOBase):
        body = _TextAsBytes(data)
    return ("file", (path, body, "application/octet-stream"))


def write_files(target: Target, path_or_entries: str | Sequence[WriteEntry],
                data: FileData | None, user: str | None) -> Op[list[WriteInfo]]:
    """POST /files as multipart: one part per file, the filename being its full path.

    File-like data is streamed by httpx in chunks, never read whole.
    """
    if isinstance(path_or_entries, str):
        if data is None:
            raise TypeError("files.write(path, data): data is missing")
        entries = [WriteEntry(absolute_path(path_or_entries, user), data)]
        params: dict[str, str] = {"path": entries[0].path}
        subject = entries[0].path
    else:
        entries = [WriteEntry(absolute_path(e.path, user), e.data) for e in path_or_entries]
        params = {}
        subject = f"{len(entries)} files"
    if user:
        params["username"] = user
    call = Call("POST", target.url(ENVD_PORT, "/files"), "envd", subject,
                headers=target.headers(ENVD_PORT), params=params,
                files=[_upload_part(e.path, e.data) for e in entries])
    response = yield call
    return [WriteInfo(name=item.get("name", ""), path=item.get("path", ""),
                      type=_file_type(item.get("type"))) for item in response.json()]


_FILE_TYPES = {"FILE_TYPE_FILE": FileType.FILE, "file": FileType.FILE,
               "FILE_TYPE_DIRECTORY": FileType.DIR, "dir": FileType.DIR,
               "directory": FileType.DIR, "FILE_TYPE_SYMLINK": FileType.SYMLINK,
               "symlink": FileType.SYMLINK}


def _file_type(value: str | None) -> FileType:
    return _FILE_TYPES.get(value or "", FileType.UNKNOWN)


def entry_info(body: dict[str, Any]) -> EntryInfo:
    """EntryInfo from its proto3-JSON form."""
    return EntryInfo(name=body.get("name", ""), path=body.get("path", ""),
                     type=_file_type(body.get("type")), size=int(body.get("size") or 0),
                     mode=int(body.get("mode") or 0), permissions=body.get("permissions", ""),
                     owner=body.get("owner", ""), group=body.get("group", ""),
                     modified_time=parse_time(body.get("modifiedTime")),
                     symlink_target=body.get("symlinkTarget"))


def list_dir(target: Target, path: str, depth: int, user: str | None) -> Op[list[EntryInfo]]:
    """Filesystem/ListDir."""
    path = absolute_path(path, user)
    response = yield rpc_call(target, "filesystem.Filesystem/ListDir",
                              {"path": path, "depth": depth}, path, user)
    return [entry_info(e) for e in response.json().get("entries", [])]


def stat(target: Target, path: str, user: str | None) -> Op[EntryInfo]:
    """Filesystem/Stat."""
    path = absolute_path(path, user)
    response = yield rpc_call(target, "filesystem.Filesystem/Stat", {"path": path}, path, user)
    return entry_info(response.json().get("entry", {}))


def exists(target: Target, path: str, user: str | None) -> Op[bool]:
    """Stat, with not-found as False."""
    try:
        yield from stat(target, path, user)
    except NotFoundException:
        return False
    return True


def make_dir(target: Target, path: str, user: str | None) -> Op[bool]:
    """Filesystem/MakeDir (with parents); False if it already existed."""
    path = absolute_path(path, user)
    try:
        yield rpc_call(target, "filesystem.Filesystem/MakeDir", {"path": path}, path, user)
    except AlreadyExistsException:
        return False
    return True


def rename(target: Target, old: str, new: str, user: str | None) -> Op[EntryInfo]:
    """Filesystem/Move."""
    body = {"source": absolute_path(old, user), "destination": absolute_path(new, user)}
    response = yield rpc_call(target, "filesystem.Filesystem/Move", body, body["source"], user)
    return entry_info(response.json().get("entry", {}))


def remove(target: Target, path: str, user: str | None) -> Op[None]:
    """Filesystem/Remove (recursive for directories)."""
    path = absolute_path(path, user)
    yield rpc_call(target, "filesystem.Filesystem/Remove", {"path": path}, path, user)


def watch_call(target: Target, path: str, recursive: bool, user: str | None) -> Call:
    """Filesystem/WatchDir stream."""
    path = absolute_path(path, user)
    return stream_call(target, "filesystem.Filesystem/WatchDir",
                       {"path": path, "recursive": recursive}, f"watch {path}", user)


def filesystem_event(event: dict[str, Any]) -> FilesystemEvent:
    """FilesystemEvent from its proto3-JSON form (EVENT_TYPE_CREATE → create)."""
    kind = str(event.get("type", "")).replace("EVENT_TYPE_", "").lower()
    return FilesystemEvent(name=event.get("name", ""), type=FilesystemEventType(kind))



# ---------------------------------------------------------------- processes


def start_call(target: Target, cmd: str, envs: dict[str, str] | None, cwd: str | None,
               user: str | None, timeout: float, stdin: bool) -> Call:
    """Process/Start: `cmd` runs as `/bin/bash -l -c cmd`."""
    process: dict[str, Any] = {"cmd": "/bin/bash", "args": ["-l", "-c", cmd], "envs": envs or {}}
    if cwd:
        process["cwd"] = absolute_path(cwd, user)
    return stream_call(target, "process.Process/Start", {"process": process, "stdin": stdin},
                       f"command {cmd!r}", user, int(timeout * 1000))


def connect_call(target: Target, pid: int, timeout: float) -> Call:
    """Process/Connect: the output stream of a running process."""
    return stream_call(target, "process.Process/Connect", {"process": {"pid": pid}},
                       f"process {pid}", timeout_ms=int(timeout * 1000))


def list_processes(target: Target) -> Op[list[ProcessInfo]]:
    """Process/List."""
    response = yield rpc_call(target, "process.Process/List", {}, "list processes")
    found = []
    for item in response.json().get("processes", []):
        config = item.get("config", {})
        found.append(ProcessInfo(pid=int(item.get("pid", 0)), cmd=config.get("cmd", ""),
                                 args=config.get("args", []), envs=config.get("envs", {}),
                                 cwd=config.get("cwd"), tag=item.get("tag")))
    return found


def kill_process(target: Target, pid: int) -> Op[bool]:
    """Process/SendSignal SIGKILL; False if there is no such process."""
    try:
        yield rpc_call(target, "process.Process/SendSignal",
                       {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}, f"process {pid}")
    except NotFoundException:
        return False
    return True


def send_stdin(target: Target, pid: int, data: str | bytes) -> Op[None]:
    """Process/SendInput."""
    raw = data.encode() if isinstance(data, str) else data
    yield rpc_call(target, "process.Process/SendInput",
                   {"process": {"pid": pid}, "input": {"stdin": base64.b64encode(raw).decode()}},
                   f"process {pid}")


def close_stdin(target: Target, pid: int) -> Op[None]:
    """Process/CloseStdin: the process reads EOF."""
    yield rpc_call(target, "process.Process/CloseStdin", {"process": {"pid": pid}},
                   f"process {pid}")


# ---------------------------------------------------------------- code interpreter


def _jupyter(target: Target, method: str, path: str, subject: str, **kwargs: Any) -> Call:
    return Call(method, target.url(JUPYTER_PORT, path), "jupyter", subject,
                headers=target.headers(JUPYTER_PORT), **kwargs)


def execute_call(target: Target, code: str, language: str | None, context: Context | None,
                 envs: dict[str, str] | None, timeout: float | None) -> Call:
    """POST /execute: NDJSON lines until the code finishes."""
    body = {"code": code, "context_id": context.id if context else None,
            "language": None if context else language, "env_vars": envs}
    read = timeout if timeout else None
    return _jupyter(target, "POST", "/execute", "run_code", json=body,
                    timeout=httpx.Timeout(target.config.request_timeout, read=read))


def _context(body: dict[str, Any]) -> Context:
    return Context(id=body["id"], language=body.get("language", ""), cwd=body.get("cwd", ""))


def create_context(target: Target, language: str | None, cwd: str | None) -> Op[Context]:
    """POST /contexts."""
    body = {k: v for k, v in (("language", language), ("cwd", cwd)) if v}
    response = yield _jupyter(target, "POST", "/contexts", "create code context", json=body)
    return _context(response.json())


def list_contexts(target: Target) -> Op[list[Context]]:
    """GET /contexts."""
    response = yield _jupyter(target, "GET", "/contexts", "list code contexts")
    return [_context(item) for item in response.json()]


def restart_context(target: Target, context_id: str) -> Op[None]:
    """POST /contexts/{id}/restart: fresh interpreter, state lost."""
    yield _jupyter(target, "POST", f"/contexts/{context_id}/restart", f"code context {context_id}")


def remove_context(target: Target, context_id: str) -> Op[None]:
    """DELETE /contexts/{id}."""
    yield _jupyter(target, "DELETE", f"/contexts/{context_id}", f"code context {context_id}")


def envd_health_call(target: Target) -> Call:
    """GET /health of the sandbox's envd: answers while the sandbox runs."""
    return Call("GET", target.url(ENVD_PORT, "/health"), "envd", f"sandbox {target.sandbox_id}",
                headers=target.headers(ENVD_PORT))
