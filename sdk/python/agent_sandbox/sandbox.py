"""`AsyncSandbox`, the async sandbox class: lifecycle, `files`, `commands` and `run_code`.

Its blocking twin is `agent_sandbox.sync.Sandbox`. `agent_sandbox.Sandbox` is this class under
its old name (deprecated: see the package docstring).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator
from datetime import datetime
from types import TracebackType
from typing import Any, Callable, TypeVar

from . import _config, _network, _ops
from ._async_transport import AsyncTransport, call_handler
from ._execution import ExecutionBuilder, code_timeout_error
from ._http import Call
from .commands import Commands
from .errors import SandboxNotFoundException, TimeoutException
from .filesystem import Filesystem
from .models import (
    Context,
    Execution,
    ExecutionError,
    FileChanges,
    Result,
    SandboxEvent,
    SandboxInfo,
    SandboxMetrics,
    SandboxQuery,
    SnapshotInfo,
)

DEFAULT_TEMPLATE = "base"
DEFAULT_TIMEOUT = 300
DEFAULT_CODE_TIMEOUT = 300


S = TypeVar("S", bound="AsyncSandbox")
"""An AsyncSandbox class or subclass (ProviderSandbox): what `create` and `connect` return."""
T = TypeVar("T")


class AsyncSandbox:
    """A running sandbox, driven with `await` (E2B's `AsyncSandbox`).

    Create with `await AsyncSandbox.create()`; `async with` kills it on exit. The blocking
    class with the same methods is `agent_sandbox.sync.Sandbox`.
    """

    def __init__(self, transport: AsyncTransport, target: _ops.Target) -> None:
        self._transport = transport
        self._target = target
        self.files = Filesystem(transport, target)
        """Files inside the sandbox."""
        self.commands = Commands(transport, target)
        """Processes inside the sandbox."""

    @property
    def sandbox_id(self) -> str:
        """The sandbox's id."""
        return self._target.sandbox_id

    @property
    def envd_version(self) -> str | None:
        """Version of the in-sandbox API the server reported."""
        return self._target.envd_version

    def get_host(self, port: int) -> str:
        """Host (no scheme) that reaches `port` in the sandbox, as E2B's `get_host`:
        `{port}-{sandbox_id}.{domain}`.

        :param port: the port a server listens on inside the sandbox
        :return: the host name, with a port when the API has one (a local daemon)
        """
        return _ops.host_of(self._target, port)

    @classmethod
    async def create(cls: type[S], template: str = DEFAULT_TEMPLATE, timeout: int = DEFAULT_TIMEOUT,
                     envs: dict[str, str] | None = None,
                     metadata: dict[str, str] | None = None, provider: str | None = None,
                     api_key: str | None = None, api_url: str | None = None,
                     domain: str | None = None,
                     request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
                     allow_internet_access: bool = True, snapshot: str | None = None,
                     cpu_count: int | None = None, memory_mb: int | None = None,
                     disk_mb: int | None = None,
                     network: dict[str, Any] | None = None,
                     volume_mounts: dict[str, str] | None = None) -> S:
        """Creates a sandbox from `template` that lives `timeout` seconds unless extended.

        :param template: template name or alias ("base", "host", "code-interpreter-v1", ...)
        :param timeout: seconds until the sandbox is killed (extend with `set_timeout`)
        :param envs: environment variables of every command and code run
        :param metadata: your key-value labels, filterable in `list`
        :param provider: "local" (default: the abx daemon, started if needed), "e2b" or
            "alicloud-express"; default $ABX_PROVIDER
        :param api_key: default $ABX_SANDBOX_API_KEY, then the local daemon's key
        :param api_url: default $ABX_SANDBOX_API_URL, then the local daemon's address file
        :param domain: sandbox domain of a remote provider
        :param request_timeout: seconds for each HTTP request
        :param allow_internet_access: False keeps the sandbox off the network
        :param cpu_count: CPUs it may use (default 1)
        :param memory_mb: its memory limit in MiB (default 512)
        :param disk_mb: its writable layer's limit in MiB (default 1024)
        :param network: E2B's network settings, e.g. `{"allow_out": ["api.example.com"],
            "deny_out": ["0.0.0.0/0"], "rules": {"api.example.com": [{"transform": {"headers":
            {"Authorization": "Bearer abx-secret:API_KEY"}}}]}}`: `allow_out`/`deny_out`
            (IPv4 addresses, CIDRs or host names; or a callable given the context),
            `rules` (headers the daemon's egress proxy sets on requests to a host; a value may
            name a stored secret, `abx-secret:NAME`, that neither the SDK nor the sandbox
            sees), `egress_proxy` (SOCKS5), `dns_servers`, `allow_public_traffic`,
            `mask_request_host`, `https_ports`; the API's camelCase names work too
        :param volume_mounts: `{"/mnt/data": "my-volume"}`: the team's volumes (by name) to
            mount read-write at those paths (`abx volume create NAME` makes one)
        :param snapshot: a snapshot id (`create_snapshot`): start on its files instead of
            `template`'s (E2B takes the id as the template, which works too)
        :return: the running sandbox
        :raises NotFoundException: no such template
        :raises RateLimitException: a quota is full (the message names it)
        :raises SandboxException: the daemon could not be reached or started
        """
        limits = _ops.resources(cpu_count, memory_mb, disk_mb)
        network_body = _network.create_network(network)

        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = await _open_transport(resolve)
        try:
            target = await transport.run(_ops.create_sandbox(
                transport.config, snapshot or template, timeout, envs, metadata,
                allow_internet_access, limits, network_body, volume_mounts))
        except BaseException:
            await transport.aclose()
            raise
        return cls(transport, target)

    @classmethod
    async def connect(cls: type[S], sandbox_id: str, timeout: int = DEFAULT_TIMEOUT,
                      provider: str | None = None, api_key: str | None = None,
                      api_url: str | None = None, domain: str | None = None,
                      request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT) -> S:
        """Connects to an existing sandbox (resuming it if paused) and extends its life.

        :param sandbox_id: the sandbox's id
        :param timeout: seconds from now until it is killed
        :param provider: as in `create`: "local" (default), "e2b" or "alicloud-express"
        :param api_key: as in `create`
        :param api_url: as in `create`
        :param domain: as in `create`
        :param request_timeout: seconds for each HTTP request
        :return: an AsyncSandbox object for it
        :raises SandboxNotFoundException: it was killed or its timeout expired
        """
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = await _open_transport(resolve)
        try:
            target = await transport.run(
                _ops.connect_sandbox(transport.config, sandbox_id, timeout))
        except BaseException:
            await transport.aclose()
            raise
        return cls(transport, target)

    @staticmethod
    async def list(query: SandboxQuery | None = None, limit: int | None = None,
                   provider: str | None = None, api_key: str | None = None,
                   api_url: str | None = None, domain: str | None = None,
                   request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
                   ) -> builtins.list[SandboxInfo]:
        """Sandboxes matching `query`, all pages.

        :param query: metadata and state filters
        :param limit: at most this many
        :param provider: as in `create`: "local" (default), "e2b" or "alicloud-express"
        :param api_key: as in `create`
        :param api_url: as in `create`
        :param domain: as in `create`
        :param request_timeout: seconds for each HTTP request
        :return: their descriptions
        """
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = await _open_transport(resolve)
        try:
            return await transport.run(_ops.list_sandboxes(transport.config, query, limit))
        finally:
            await transport.aclose()

    async def kill(self) -> bool:
        """Destroys the sandbox; afterwards every call on this object raises.

        :return: True if it was killed, False if it was already gone (or killed before)
        :raises SandboxException: the server could not be reached (the object stays usable)
        """
        if self._transport.killed:
            return False
        config = self._transport.config
        killed = await self._transport.run(_ops.kill_sandbox(config, self.sandbox_id))
        self._transport.mark_closed(self.sandbox_id, killed=True)
        return killed

    async def close(self) -> None:
        """Stops using this object; the sandbox keeps running (see `connect`).

        Later calls raise SandboxClosedException.
        """
        if not self._transport.killed:
            self._transport.mark_closed(self.sandbox_id, killed=False)

    async def get_metrics(self, start: datetime | None = None,
                    end: datetime | None = None) -> builtins.list[SandboxMetrics]:
        """CPU, memory and disk use of the sandbox.

        :param start: earliest sample wanted (a daemon without history answers its latest)
        :param end: latest sample wanted
        :return: the samples, oldest first
        :raises SandboxNotFoundException: the sandbox is gone
        """
        config = self._transport.config
        return await self._transport.run(_ops.get_metrics(config, self.sandbox_id, start, end))

    async def set_timeout(self, seconds: int) -> None:
        """The sandbox now ends `seconds` from now (shorter or longer than before).

        :param seconds: its remaining life
        :raises SandboxNotFoundException: it is gone
        """
        config = self._transport.config
        await self._transport.run(_ops.set_timeout(config, self.sandbox_id, seconds))

    async def update_network(self, network: dict[str, Any]) -> None:
        """Replaces the sandbox's egress settings while it runs (E2B's `update_network`);
        connections the new settings forbid are cut.

        :param network: the new egress settings, replacing the old ones whole (what is left out
            is cleared, as on E2B): `allow_out`, `deny_out`, `rules` (a header value may be
            `abx-secret:NAME`), `egress_proxy`, `dns_servers`, and `allow_internet_access`
            (False: no egress at all); the ingress settings (`allow_public_traffic`,
            `mask_request_host`, `https_ports`) are fixed at create
        :raises InvalidArgumentException: a setting is unknown, malformed or fixed at create
        :raises SandboxNotFoundException: the sandbox is gone
        :raises ConflictException: it is paused
        """
        body = _network.update_network(network)
        await self._transport.run(_ops.update_network(self._transport.config, self.sandbox_id,
                                                   body))

    async def pause(self, keep_memory: bool = True) -> bool:
        """Freezes the sandbox where it stands: its processes, memory and files are kept,
        its timeout stops running. Calls into it fail until `resume()` or `connect`.

        :param keep_memory: False keeps its files only (E2B's keep_memory=False): its
            processes end and `resume()` boots it afresh on the same files
        :return: True if it got paused, False if it was already paused
        :raises SandboxNotFoundException: it is gone
        :raises ConflictException: a pause or resume is under way
        """
        return await self._transport.run(_ops.pause_sandbox(self._transport.config,
                                                            self.sandbox_id, keep_memory))

    async def diff(self) -> FileChanges:
        """What the sandbox changed on top of its template, like `docker diff`: each added,
        changed or deleted path (a dir only when new or replaced), read now.

        :return: FileChanges (`truncated` when there is more than one diff lists)
        """
        return await self._transport.run(_ops.sandbox_diff(self._transport.config,
                                                           self.sandbox_id))

    async def events(self, type: str | None = None,
                     since: int | None = None) -> builtins.list[SandboxEvent]:
        """The sandbox's flight record (local provider only): what happened in it, oldest
        first, as `abx events` shows it: lifecycle (created, timeout set, paused, ended, ...),
        commands (started with argv, cwd and env names, never values; ended with exit code)
        and files (uploaded, downloaded, with size and sha256).

        :param type: only "lifecycle", "commands", "files" or "network" events
        :param since: only events after this `seq` (the last one you have)
        :return: the events, at most 10 000 a call (ask again with `since`)
        :raises UnsupportedException: a remote provider (they keep no such record)
        :raises InvalidArgumentException: an unknown type, or a since that is no seq
        :raises SandboxNotFoundException: it ended more than a day ago, or this object killed it
        """
        return await self._transport.run(_ops.sandbox_events(self._transport.config,
                                                             self.sandbox_id, type, since))

    @staticmethod
    async def get_events(sandbox_id: str, type: str | None = None, since: int | None = None,
                         provider: str | None = None, api_key: str | None = None,
                         api_url: str | None = None,
                         request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
                         ) -> builtins.list[SandboxEvent]:
        """A sandbox's flight record by id, with no Sandbox object: also one that has ended
        (its record is kept `events.retentionHours`, a day by default), from any process.

        :param sandbox_id: the sandbox's id
        :param type: as in `events`
        :param since: as in `events`
        :param provider: as in `create`: "local" (default); remote providers keep no record
        :param api_key: as in `create`
        :param api_url: as in `create`
        :param request_timeout: seconds for each HTTP request
        :return: the events, oldest first, at most 10 000 a call (ask again with `since`)
        :raises UnsupportedException: a remote provider
        :raises SandboxNotFoundException: unknown, another team's, or ended longer ago than
            the retention
        """
        return await _run_once(provider, api_key, api_url, request_timeout,
                               lambda config: _ops.sandbox_events(config, sandbox_id, type,
                                                                  since))

    def follow_events(self, type: str | None = None,
                      since: int | None = None) -> AsyncIterator[SandboxEvent]:
        """The events so far, then each new one as it happens (within a quarter second), for
        `async for`; the iteration ends after the sandbox's lifecycle `ended` event (or, with
        a `type` filter, when the sandbox ends). Leaving the loop early closes the stream once
        the iterator is dropped; `await iterator.aclose()` closes it at once.

        :param type: as in `events`
        :param since: as in `events`
        :return: an async iterator of SandboxEvent
        :raises UnsupportedException: a remote provider (raised here, before any request)
        """
        call = _ops.events_call(self._transport.config, self.sandbox_id, type, since,
                                follow=True)
        return self._follow(call)

    async def _follow(self, call: Call) -> AsyncIterator[SandboxEvent]:
        stream = await self._transport.sse_stream(call)
        try:
            async for message in stream:
                yield _ops.sandbox_event(message)
        finally:
            await stream.aclose()

    async def create_snapshot(self, name: str | None = None) -> SnapshotInfo:
        """A snapshot of the sandbox's files; the sandbox is frozen for the copy and goes
        on as it was. `AsyncSandbox.create(snapshot=info.snapshot_id)` starts sandboxes on it.

        :param name: a name for it, shown in `list_snapshots`
        :return: its SnapshotInfo
        :raises RateLimitException: the team's snapshot quota is full
        """
        return await self._transport.run(_ops.create_snapshot(self._transport.config,
                                                              self.sandbox_id, name))

    @staticmethod
    async def list_snapshots(sandbox_id: str | None = None, provider: str | None = None,
                             api_key: str | None = None, api_url: str | None = None,
                             request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
                             ) -> builtins.list[SnapshotInfo]:
        """Your team's snapshots (of one sandbox, when given), newest first.

        :param sandbox_id: only the snapshots of this sandbox
        :param provider: as in `create`: "local" (default), "e2b" or "alicloud-express"
        :param api_key: as in `create`
        :param api_url: as in `create`
        :param request_timeout: seconds for each HTTP request
        :return: their SnapshotInfo
        """
        return await _run_once(provider, api_key, api_url, request_timeout,
                               lambda config: _ops.list_snapshots(config, sandbox_id))

    @staticmethod
    async def delete_snapshot(snapshot_id: str, provider: str | None = None,
                              api_key: str | None = None, api_url: str | None = None,
                              request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT) -> bool:
        """Removes a snapshot and frees its disk; sandboxes started on it keep running.

        :param snapshot_id: the snapshot's id (`SnapshotInfo.snapshot_id`)
        :param provider: as in `create`: "local" (default), "e2b" or "alicloud-express"
        :param api_key: as in `create`
        :param api_url: as in `create`
        :param request_timeout: seconds for each HTTP request
        :return: False if your team has no such snapshot
        """
        return await _run_once(provider, api_key, api_url, request_timeout,
                               lambda config: _ops.delete_snapshot(config, snapshot_id))

    async def fork(self: S, count: int = 1,
                   timeout: int | None = None) -> builtins.list[S | Exception]:
        """`count` new sandboxes on a copy of this one's files (E2B's fork); this one goes
        on running. Each fork succeeds or fails on its own.

        :param count: 1 to 20
        :param timeout: seconds each new sandbox lives (default: the server's)
        :return: one entry per fork: the running sandbox, or the exception it met
        """
        config = self._transport.config
        targets = await self._transport.run(_ops.fork_sandbox(config, self.sandbox_id, count,
                                                              timeout))
        return [target if isinstance(target, Exception)
                else type(self)(AsyncTransport(config, self._transport._client), target)
                for target in targets]

    async def resume(self, timeout: int = DEFAULT_TIMEOUT) -> bool:
        """Resumes a paused sandbox as it was; it then ends `timeout` seconds from now.

        :param timeout: its remaining life once resumed
        :return: True if it got resumed, False if it was running already
        :raises SandboxNotFoundException: it is gone
        """
        return await self._transport.run(_ops.resume_sandbox(self._transport.config,
                                                             self.sandbox_id, timeout))

    async def get_info(self) -> SandboxInfo:
        """Template, metadata, start and end time of the sandbox.

        :return: its SandboxInfo
        :raises SandboxNotFoundException: it is gone
        """
        return await self._transport.run(_ops.get_info(self._transport.config, self.sandbox_id))

    async def is_running(self) -> bool:
        """True if the sandbox answers its health check.

        :return: False if it was killed or does not answer
        """
        try:
            await self._transport.send(_ops.envd_health_call(self._target))
        except (SandboxNotFoundException, TimeoutException):
            return False
        return True

    async def run_code(self, code: str, language: str = "python", context: Context | None = None,
                       envs: dict[str, str] | None = None,
                       on_stdout: Callable[[str], Any] | None = None,
                       on_stderr: Callable[[str], Any] | None = None,
                       on_result: Callable[[Result], Any] | None = None,
                       on_error: Callable[[ExecutionError], Any] | None = None,
                       timeout: float | None = DEFAULT_CODE_TIMEOUT) -> Execution:
        """Runs code in a stateful interpreter context (needs the code-interpreter template).

        :param code: the code
        :param language: its language when no `context` is given (its default context is used)
        :param context: a context from `create_code_context`
        :param envs: extra environment variables for this run
        :param on_stdout: called with each piece of stdout
        :param on_stderr: called with each piece of stderr
        :param on_result: called with each rich result (display data, the last expression)
        :param on_error: called with the error, if the code raised
        :param timeout: seconds (None or 0: no limit); on timeout the code is interrupted, the
            context and the sandbox live on
        :return: the Execution: results, logs, and the error the code raised (not re-raised)
        :raises TimeoutException: the code ran past `timeout`
        """
        call = _ops.execute_call(self._target, code, language, context, envs, timeout)
        handlers = {"stdout": on_stdout, "stderr": on_stderr, "result": on_result,
                    "error": on_error}
        builder = ExecutionBuilder()

        async def consume() -> None:
            stream = await self._transport.ndjson_stream(call)
            try:
                async for line in stream:
                    event = builder.handle(line)
                    if event:
                        await call_handler(handlers[event[0]], event[1])
            finally:
                await stream.aclose()

        try:
            await asyncio.wait_for(consume(), timeout or None)
        except asyncio.TimeoutError as error:
            if isinstance(error, TimeoutException):  # the SDK's own: explains itself
                raise
            raise code_timeout_error(timeout) from error
        return builder.execution

    async def create_code_context(self, language: str = "python",
                                  cwd: str | None = None) -> Context:
        """A new interpreter context with its own state.

        :param language: e.g. "python"
        :param cwd: its working directory
        :return: the Context
        """
        return await self._transport.run(_ops.create_context(self._target, language, cwd))

    async def list_code_contexts(self) -> builtins.list[Context]:
        """The sandbox's interpreter contexts.

        :return: every Context
        """
        return await self._transport.run(_ops.list_contexts(self._target))

    async def restart_code_context(self, context: Context) -> None:
        """Restarts a context's interpreter: its state is lost.

        :param context: the context
        :raises NotFoundException: no such context
        """
        await self._transport.run(_ops.restart_context(self._target, context.id))

    async def remove_code_context(self, context: Context) -> None:
        """Removes a context and stops its interpreter.

        :param context: the context
        :raises NotFoundException: no such context
        """
        await self._transport.run(_ops.remove_context(self._target, context.id))

    async def __aenter__(self: S) -> S:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.kill()


async def _run_once(provider: str | None, api_key: str | None, api_url: str | None,
                    request_timeout: float,
                    op: Callable[[_config.ConnectionConfig], _ops.Op[T]]) -> T:
    """One control-plane operation on a transport of its own (a call on no sandbox)."""
    def resolve() -> _config.ConnectionConfig:
        return _config.resolve(provider, api_key, api_url, None, request_timeout)

    transport = await _open_transport(resolve)
    try:
        return await transport.run(op(transport.config))
    finally:
        await transport.aclose()


async def _open_transport(resolve: Callable[[], _config.ConnectionConfig]) -> AsyncTransport:
    transport = AsyncTransport(resolve())
    try:
        await transport.ensure_local_daemon(resolve)
    except BaseException:
        await transport.aclose()
        raise
    return transport
