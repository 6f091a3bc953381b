"""The async `Sandbox`: lifecycle, `files`, `commands` and `run_code`."""

from __future__ import annotations

import asyncio
import builtins
from types import TracebackType
from typing import Any, Callable

from . import _config, _ops
from ._async_transport import AsyncTransport, call_handler
from ._execution import ExecutionBuilder, code_timeout_error
from .commands import Commands
from .errors import SandboxNotFound, TimeoutError
from .filesystem import Filesystem
from .models import Context, Execution, ExecutionError, Result, SandboxInfo, SandboxQuery

DEFAULT_TEMPLATE = "base"
DEFAULT_TIMEOUT = 300
DEFAULT_CODE_TIMEOUT = 300


class Sandbox:
    """A running sandbox. Create with `await Sandbox.create()`; `async with` kills it on exit."""

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

    @classmethod
    async def create(cls, template: str = DEFAULT_TEMPLATE, timeout: int = DEFAULT_TIMEOUT,
                     envs: dict[str, str] | None = None,
                     metadata: dict[str, str] | None = None, provider: str | None = None,
                     api_key: str | None = None, api_url: str | None = None,
                     domain: str | None = None,
                     request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
                     allow_internet_access: bool = True) -> Sandbox:
        """Creates a sandbox from `template` that lives `timeout` seconds unless extended.

        `provider` is "local" (default: the abx daemon, started if needed), "e2b" or
        "alicloud-express".
        """
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = await _open_transport(resolve)
        try:
            target = await transport.run(_ops.create_sandbox(
                transport.config, template, timeout, envs, metadata, allow_internet_access))
        except BaseException:
            await transport.aclose()
            raise
        return cls(transport, target)

    @classmethod
    async def connect(cls, sandbox_id: str, timeout: int = DEFAULT_TIMEOUT,
                      provider: str | None = None, api_key: str | None = None,
                      api_url: str | None = None, domain: str | None = None,
                      request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT) -> Sandbox:
        """Connects to an existing sandbox (resuming it if paused); raises SandboxNotFound."""
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
        """Sandboxes matching `query`, all pages (at most `limit` if given)."""
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = await _open_transport(resolve)
        try:
            return await transport.run(_ops.list_sandboxes(transport.config, query, limit))
        finally:
            await transport.aclose()

    async def kill(self) -> bool:
        """Destroys the sandbox and closes this client; False if it was already gone."""
        try:
            return await self._transport.run(_ops.kill_sandbox(self._transport.config,
                                                               self.sandbox_id))
        finally:
            await self.close()

    async def close(self) -> None:
        """Closes this client's connections; the sandbox keeps running."""
        await self._transport.aclose()

    async def set_timeout(self, seconds: int) -> None:
        """The sandbox now ends `seconds` from now."""
        config = self._transport.config
        await self._transport.run(_ops.set_timeout(config, self.sandbox_id, seconds))

    async def get_info(self) -> SandboxInfo:
        """Template, metadata, start and end time of the sandbox."""
        return await self._transport.run(_ops.get_info(self._transport.config, self.sandbox_id))

    async def is_running(self) -> bool:
        """True if the sandbox answers its health check."""
        try:
            await self._transport.send(_ops.envd_health_call(self._target))
        except (SandboxNotFound, TimeoutError):
            return False
        return True

    async def run_code(self, code: str, language: str = "python", context: Context | None = None,
                       envs: dict[str, str] | None = None,
                       on_stdout: Callable[[str], Any] | None = None,
                       on_stderr: Callable[[str], Any] | None = None,
                       on_result: Callable[[Result], Any] | None = None,
                       on_error: Callable[[ExecutionError], Any] | None = None,
                       timeout: float | None = DEFAULT_CODE_TIMEOUT) -> Execution:
        """Runs code in a stateful interpreter context (the language's default one if none).

        On timeout the code is interrupted (the context and sandbox live on) and
        TimeoutError is raised.
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
            if isinstance(error, TimeoutError):  # ours, raised by the SDK: already explains itself
                raise
            raise code_timeout_error(timeout) from error
        return builder.execution

    async def create_code_context(self, language: str = "python",
                                  cwd: str | None = None) -> Context:
        """A new interpreter context with its own state."""
        return await self._transport.run(_ops.create_context(self._target, language, cwd))

    async def list_code_contexts(self) -> builtins.list[Context]:
        """The sandbox's interpreter contexts."""
        return await self._transport.run(_ops.list_contexts(self._target))

    async def restart_code_context(self, context: Context) -> None:
        """Restarts a context's interpreter: its state is lost."""
        await self._transport.run(_ops.restart_context(self._target, context.id))

    async def remove_code_context(self, context: Context) -> None:
        """Removes a context and stops its interpreter."""
        await self._transport.run(_ops.remove_context(self._target, context.id))

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.kill()


async def _open_transport(resolve: Callable[[], _config.ConnectionConfig]) -> AsyncTransport:
    transport = AsyncTransport(resolve())
    try:
        await transport.ensure_local_daemon(resolve)
    except BaseException:
        await transport.aclose()
        raise
    return transport
