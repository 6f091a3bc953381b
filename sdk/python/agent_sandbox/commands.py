"""`sandbox.commands` for the async client."""

from __future__ import annotations

import asyncio
import builtins
from typing import Callable, Literal, overload

from . import _ops
from ._async_transport import AsyncMessageStream, AsyncTransport, call_handler
from ._http import Call
from ._process import ProcessOutput
from .errors import SandboxException
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
        """Waits for the command to end.

        :return: its CommandResult
        :raises CommandExitException: it exited non-zero and `check` was set
        :raises TimeoutException: it ran past the `timeout` it was started with (it was killed)
        """
        if self._task.cancelled():
            raise SandboxException(f"process {self.pid}: this handle was disconnected; "
                                   "attach again with commands.connect(pid)")
        await asyncio.shield(self._task)
        return self._output.result(self._check)

    async def kill(self) -> bool:
        """Sends SIGKILL to the command.

        :return: False if the process was already gone
        """
        return await self._transport.run(_ops.kill_process(self._target, self.pid))

    async def send_stdin(self, data: str | bytes) -> None:
        """Writes to the command's stdin (start it with `stdin=True`).

        :param data: text (UTF-8) or bytes
        """
        await self._transport.run(_ops.send_stdin(self._target, self.pid, data))

    async def close_stdin(self) -> None:
        """Closes stdin: the process reads EOF."""
        await self._transport.run(_ops.close_stdin(self._target, self.pid))

    async def disconnect(self) -> None:
        """Stops receiving output; the process keeps running (see `commands.connect`).

        Later `wait()` calls raise SandboxException.
        """
        self._task.cancel()
        if self._task is not asyncio.current_task():
            # The reader must have left the stream before it is closed: closing a generator
            # that is suspended in a read raises "aclose(): ... already running".
            await asyncio.gather(self._task, return_exceptions=True)
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
        """Runs a shell command (`/bin/bash -l -c cmd`).

        :param cmd: the command line
        :param background: return a CommandHandle as soon as it started instead of waiting
        :param envs: extra environment variables
        :param cwd: working directory (relative: to the user's home)
        :param user: user to run as (default "user")
        :param timeout: seconds its whole life may take (0: no limit); then it is killed
        :param on_stdout: called with each piece of stdout as it arrives
        :param on_stderr: called with each piece of stderr as it arrives
        :param stdin: keep stdin open for `send_stdin`
        :param check: raise CommandExitException on a non-zero exit (E2B's behaviour)
        :return: its CommandResult, or a CommandHandle with `background=True`
        :raises CommandExitException: it exited non-zero and `check` is set
        :raises TimeoutException: it ran past `timeout` (it was killed)
        """
        call = _ops.start_call(self._target, cmd, envs, cwd, user, timeout, stdin)
        handle = await self._open(call, on_stdout, on_stderr, check)
        return handle if background else await handle.wait()

    async def connect(self, pid: int, timeout: float = 0,
                      on_stdout: OutputHandler | None = None,
                      on_stderr: OutputHandler | None = None,
                      check: bool = True) -> CommandHandle:
        """Attaches to a running process's output (from now on).

        :param pid: its pid (from `list` or a handle)
        :param timeout: seconds to follow it (0: until it ends)
        :return: a CommandHandle
        :raises NotFoundException: no such process
        """
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
        """Processes started through the API that are still running.

        :return: their ProcessInfo
        """
        return await self._transport.run(_ops.list_processes(self._target))

    async def kill(self, pid: int) -> bool:
        """Sends SIGKILL to a process.

        :param pid: its pid
        :return: False if there is no such process
        """
        return await self._transport.run(_ops.kill_process(self._target, pid))

    async def send_stdin(self, pid: int, data: str | bytes) -> None:
        """Writes to a process's stdin.

        :param pid: its pid
        :param data: text (UTF-8) or bytes
        :raises NotFoundException: no such process
        """
        await self._transport.run(_ops.send_stdin(self._target, pid, data))

    async def close_stdin(self, pid: int) -> None:
        """Closes a process's stdin: it reads EOF.

        :param pid: its pid
        :raises NotFoundException: no such process
        """
        await self._transport.run(_ops.close_stdin(self._target, pid))
