"""`sandbox.commands` for the async client."""

from __future__ import annotations

import asyncio
import builtins
from typing import Callable, Literal, overload

from . import _ops
from ._async_transport import AsyncMessageStream, AsyncTransport, call_handler
from ._http import Call
from ._process import ProcessOutput
from .models import CommandResult, ProcessInfo

OutputHandler = Callable[[str], object]
"""Called with each chunk of output as it arrives; may be a coroutine function."""


class CommandHandle:
    """A running command: its output is collected (and handed to callbacks) in the background."""

    def __init__(self, transport: AsyncTransport, target: _ops.Target, stream: AsyncMessageStream,
                 output: ProcessOutput, on_stdout: OutputHandler | None,
                 on_stderr: OutputHandler | None, check: bool) -> None:
        self._transport = transport
        self._target = target
        self._stream = stream
        self._output = output
        self._check = check
        self._task = asyncio.create_task(self._collect(on_stdout, on_stderr))
        # A handle nobody waits on must not log "exception was never retrieved".
        self._task.add_done_callback(lambda task: task.cancelled() or task.exception())

    @property
    def pid(self) -> int:
        """The process id inside the sandbox."""
        return self._output.pid or 0

    @property
    def stdout(self) -> str:
        """Stdout received so far."""
        return "".join(self._output.stdout)

    @property
    def stderr(self) -> str:
        """Stderr received so far."""
        return "".join(self._output.stderr)

    async def _collect(self, on_stdout: OutputHandler | None,
                       on_stderr: OutputHandler | None) -> None:
        handlers = {"stdout": on_stdout, "stderr": on_stderr}
        try:
            async for message in self._stream:
                chunk = self._output.handle(message)
                if chunk:
                    await call_handler(handlers[chunk[0]], chunk[1])
        finally:
            await self._stream.aclose()

    async def wait(self) -> CommandResult:
        """Waits for the exit; raises CommandExitException on a non-zero code if `check`."""
        await asyncio.shield(self._task)
        return self._output.result(self._check)

    async def kill(self) -> bool:
        """Sends SIGKILL; False if the process was already gone."""
        return await self._transport.run(_ops.kill_process(self._target, self.pid))

    async def send_stdin(self, data: str | bytes) -> None:
        """Writes to the process's stdin (start it with stdin=True)."""
        await self._transport.run(_ops.send_stdin(self._target, self.pid, data))

    async def close_stdin(self) -> None:
        """Closes stdin: the process reads EOF."""
        await self._transport.run(_ops.close_stdin(self._target, self.pid))

    async def disconnect(self) -> None:
        """Stops receiving output; the process keeps running (see `commands.connect`)."""
        self._task.cancel()
        await self._stream.aclose()


class Commands:
    """Processes inside one sandbox. Commands run as `/bin/bash -l -c <cmd>`."""

    def __init__(self, transport: AsyncTransport, target: _ops.Target) -> None:
        self._transport = transport
        self._target = target

    @overload
    async def run(self, cmd: str, background: Literal[False] = False,
                  envs: dict[str, str] | None = None, cwd: str | None = None,
                  user: str | None = None, timeout: float = 60,
                  on_stdout: OutputHandler | None = None,
                  on_stderr: OutputHandler | None = None, stdin: bool = False,
                  check: bool = True) -> CommandResult: ...

    @overload
    async def run(self, cmd: str, background: Literal[True], envs: dict[str, str] | None = None,
                  cwd: str | None = None, user: str | None = None, timeout: float = 60,
                  on_stdout: OutputHandler | None = None,
                  on_stderr: OutputHandler | None = None, stdin: bool = False,
                  check: bool = True) -> CommandHandle: ...

    async def run(self, cmd: str, background: bool = False, envs: dict[str, str] | None = None,
                  cwd: str | None = None, user: str | None = None, timeout: float = 60,
                  on_stdout: OutputHandler | None = None,
                  on_stderr: OutputHandler | None = None, stdin: bool = False,
                  check: bool = True) -> CommandResult | CommandHandle:
        """Runs a shell command; `timeout` seconds (0 = none) bound its whole life.

        Returns its result (raising CommandExitException on a non-zero exit when `check`), or,
        with `background=True`, a CommandHandle as soon as it started.
        """
        call = _ops.start_call(self._target, cmd, envs, cwd, user, timeout, stdin)
        handle = await self._open(call, on_stdout, on_stderr, check)
        return handle if background else await handle.wait()

    async def connect(self, pid: int, timeout: float = 0,
                      on_stdout: OutputHandler | None = None,
                      on_stderr: OutputHandler | None = None,
                      check: bool = True) -> CommandHandle:
        """Attaches to a running process's output (from now on)."""
        call = _ops.connect_call(self._target, pid, timeout)
        return await self._open(call, on_stdout, on_stderr, check)

    async def _open(self, call: Call, on_stdout: OutputHandler | None,
                    on_stderr: OutputHandler | None, check: bool) -> CommandHandle:
        stream = await self._transport.connect_stream(call)
        output = ProcessOutput(call)
        try:
            output.expect_start(await stream.next_or_none())
        except BaseException:
            await stream.aclose()
            raise
        return CommandHandle(self._transport, self._target, stream, output, on_stdout, on_stderr,
                             check)

    async def list(self) -> builtins.list[ProcessInfo]:
        """Processes started through the API that are still running."""
        return await self._transport.run(_ops.list_processes(self._target))

    async def kill(self, pid: int) -> bool:
        """SIGKILLs a process; False if there is no such pid."""
        return await self._transport.run(_ops.kill_process(self._target, pid))

    async def send_stdin(self, pid: int, data: str | bytes) -> None:
        """Writes to a process's stdin."""
        await self._transport.run(_ops.send_stdin(self._target, pid, data))

    async def close_stdin(self, pid: int) -> None:
        """Closes a process's stdin."""
        await self._transport.run(_ops.close_stdin(self._target, pid))
