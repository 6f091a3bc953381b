"""The sync `Sandbox`: lifecycle, `files`, `commands` and `run_code`."""

from __future__ import annotations

import builtins
import time
from types import TracebackType
from typing import Any, Callable

import httpx

from .. import _config, _ops
from .._execution import ExecutionBuilder, code_timeout_error
from ..errors import SandboxNotFound, TimeoutError
from ..models import Context, Execution, ExecutionError, Result, SandboxInfo, SandboxQuery
from ..sandbox import DEFAULT_CODE_TIMEOUT, DEFAULT_TEMPLATE, DEFAULT_TIMEOUT
from ._transport import Transport
from .commands import Commands
from .filesystem import Filesystem


class Sandbox:
    """A running sandbox. Create with `Sandbox.create()`; `with` kills it on exit."""

    def __init__(self, transport: Transport, target: _ops.Target) -> None:
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
    def create(cls, template: str = DEFAULT_TEMPLATE, timeout: int = DEFAULT_TIMEOUT,
               envs: dict[str, str] | None = None, metadata: dict[str, str] | None = None,
               provider: str | None = None, api_key: str | None = None,
               api_url: str | None = None, domain: str | None = None,
               request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
               allow_internet_access: bool = True) -> Sandbox:
        """Creates a sandbox from `template` that lives `timeout` seconds unless extended.

        `provider` is "local" (default: the abx daemon, started if needed), "e2b" or
        "alicloud-express".
        """
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = _open_transport(resolve)
        try:
            target = transport.run(_ops.create_sandbox(
                transport.config, template, timeout, envs, metadata, allow_internet_access))
        except BaseException:
            transport.close()
            raise
        return cls(transport, target)

    @classmethod
    def connect(cls, sandbox_id: str, timeout: int = DEFAULT_TIMEOUT,
                provider: str | None = None, api_key: str | None = None,
                api_url: str | None = None, domain: str | None = None,
                request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT) -> Sandbox:
        """Connects to an existing sandbox (resuming it if paused); raises SandboxNotFound."""
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = _open_transport(resolve)
        try:
            target = transport.run(_ops.connect_sandbox(transport.config, sandbox_id, timeout))
        except BaseException:
            transport.close()
            raise
        return cls(transport, target)

    @staticmethod
    def list(query: SandboxQuery | None = None, limit: int | None = None,
             provider: str | None = None, api_key: str | None = None,
             api_url: str | None = None, domain: str | None = None,
             request_timeout: float = _config.DEFAULT_REQUEST_TIMEOUT,
             ) -> builtins.list[SandboxInfo]:
        """Sandboxes matching `query`, all pages (at most `limit` if given)."""
        def resolve() -> _config.ConnectionConfig:
            return _config.resolve(provider, api_key, api_url, domain, request_timeout)

        transport = _open_transport(resolve)
        try:
            return transport.run(_ops.list_sandboxes(transport.config, query, limit))
        finally:
            transport.close()

    def kill(self) -> bool:
        """Destroys the sandbox and closes this client; False if it was already gone."""
        try:
            return self._transport.run(_ops.kill_sandbox(self._transport.config, self.sandbox_id))
        finally:
            self.close()

    def close(self) -> None:
        """Closes this client's connections; the sandbox keeps running."""
        self._transport.close()

    def set_timeout(self, seconds: int) -> None:
        """The sandbox now ends `seconds` from now."""
        self._transport.run(_ops.set_timeout(self._transport.config, self.sandbox_id, seconds))

    def get_info(self) -> SandboxInfo:
        """Template, metadata, start and end time of the sandbox."""
        return self._transport.run(_ops.get_info(self._transport.config, self.sandbox_id))

    def is_running(self) -> bool:
        """True if the sandbox answers its health check."""
        try:
            self._transport.send(_ops.envd_health_call(self._target))
        except (SandboxNotFound, TimeoutError):
            return False
        return True

    def run_code(self, code: str, language: str = "python", context: Context | None = None,
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
        deadline = time.monotonic() + timeout if timeout else None
        stream = self._transport.ndjson_stream(call)
        try:
            for line in stream:
                event = builder.handle(line)
                handler = handlers[event[0]] if event else None
                if event and handler:
                    handler(event[1])
                if deadline is not None and time.monotonic() > deadline:
                    raise code_timeout_error(timeout)
        except TimeoutError as error:
            if isinstance(error.__cause__, httpx.ReadTimeout):
                raise code_timeout_error(timeout) from error
            raise
        finally:
            stream.close()
        return builder.execution

    def create_code_context(self, language: str = "python", cwd: str | None = None) -> Context:
        """A new interpreter context with its own state."""
        return self._transport.run(_ops.create_context(self._target, language, cwd))

    def list_code_contexts(self) -> builtins.list[Context]:
        """The sandbox's interpreter contexts."""
        return self._transport.run(_ops.list_contexts(self._target))

    def restart_code_context(self, context: Context) -> None:
        """Restarts a context's interpreter: its state is lost."""
        self._transport.run(_ops.restart_context(self._target, context.id))

    def remove_code_context(self, context: Context) -> None:
        """Removes a context and stops its interpreter."""
        self._transport.run(_ops.remove_context(self._target, context.id))

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.kill()


def _open_transport(resolve: Callable[[], _config.ConnectionConfig]) -> Transport:
    transport = Transport(resolve())
    try:
        transport.ensure_local_daemon(resolve)
    except BaseException:
        transport.close()
        raise
    return transport
