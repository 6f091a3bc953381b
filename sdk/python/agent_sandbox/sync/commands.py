"""`sandbox.commands` for the sync client."""

from __future__ import annotations

import builtins
from typing import Callable, Literal, overload

from .. import _ops
from .._http import Call
from .._process import ProcessOutput
from ..models import CommandResult, ProcessInfo
from ._transport import MessageStream, Transport

OutputHandler = Callable[[str], object]
"""Called with each chunk of output as it arrives."""


class CommandHandle:
    """A running command; its output is read (and handed to callbacks) by `wait()`."""

    def __init__(self, transport: Transport, target: _ops.Target, stream: MessageStream,
                 output: ProcessOutput, on_stdout: OutputHandler | None,
                 on_stderr: OutputHandler | None, check: bool) -> None:
        self._transport = transport
        self._target = target
        self._stream = stream
        self._output = output
        self._handlers = {"stdout": on_stdout, "stderr": on_stderr}
        self._check = check

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

    def wait(self) -> CommandResult:
        """Reads output until the exit; raises CommandExitException on non-zero if `check`."""
        try:
            for message in self._stream:
                chunk = self._output.handle(message)
                handler = self._handlers[chunk[0]] if chunk else None
                if chunk and handler:
                    handler(chunk[1])
        finally:
            self._stream.close()
        return self._output.result(self._check)

    def kill(self) -> bool:
        """Sends SIGKILL; False if the process was already gone."""
        return self._transport.run(_ops.kill_process(self._target, self.pid))

    def send_stdin(self, data: str | bytes) -> None:
        """Writes to the process's stdin (start it with stdin=True)."""
        self._transport.run(_ops.send_stdin(self._target, self.pid, data))

    def close_stdin(self) -> None:
        """Closes stdin: the process reads EOF."""
        self._transport.run(_ops.close_stdin(self._target, self.pid))

    def disconnect(self) -> None:
        """Stops receiving output; the process keeps running (see `commands.connect`)."""
        self._stream.close()


class Commands:
    """Processes inside one sandbox. Commands run as `/bin/bash -l -c <cmd>`."""

    def __init__(self, transport: Transport, target: _ops.Target) -> None:
        self._transport = transport
        self._target = target

    @overload
    def run(self, cmd: str, background: Literal[False] = False,
            envs: dict[str, str] | None = None, cwd: str | None = None,
            user: str | None = None, timeout: float = 60,
            on_stdout: OutputHandler | None = None, on_stderr: OutputHandler | None = None,
            stdin: bool = False, check: bool = True) -> CommandResult: ...

    @overload
    def run(self, cmd: str, background: Literal[True], envs: dict[str, str] | None = None,
            cwd: str | None = None, user: str | None = None, timeout: float = 60,
            on_stdout: OutputHandler | None = None, on_stderr: OutputHandler | None = None,
            stdin: bool = False, check: bool = True) -> CommandHandle: ...

    def run(self, cmd: str, background: bool = False, envs: dict[str, str] | None = None,
            cwd: str | None = None, user: str | None = None, timeout: float = 60,
            on_stdout: OutputHandler | None = None, on_stderr: OutputHandler | None = None,
            stdin: bool = False, check: bool = True) -> CommandResult | CommandHandle:
        """Runs a shell command; `timeout` seconds (0 = none) bound its whole life.

        Returns its result (raising CommandExitException on a non-zero exit when `check`), or,
        with `background=True`, a CommandHandle as soon as it started.
        """
        call = _ops.start_call(self._target, cmd, envs, cwd, user, timeout, stdin)
        handle = self._open(call, on_stdout, on_stderr, check)
        return handle if background else handle.wait()

    def connect(self, pid: int, timeout: float = 0, on_stdout: OutputHandler | None = None,
                on_stderr: OutputHandler | None = None, check: bool = True) -> CommandHandle:
        """Attaches to a running process's output (from now on)."""
        return self._open(_ops.connect_call(self._target, pid, timeout), on_stdout, on_stderr,
                          check)

    def _open(self, call: Call, on_stdout: OutputHandler | None,
              on_stderr: OutputHandler | None, check: bool) -> CommandHandle:
        stream = self._transport.connect_stream(call)
        output = ProcessOutput(call)
        try:
            output.expect_start(stream.next_or_none())
        except BaseException:
            stream.close()
            raise
        return CommandHandle(self._transport, self._target, stream, output, on_stdout, on_stderr,
                             check)

    def list(self) -> builtins.list[ProcessInfo]:
        """Processes started through the API that are still running."""
        return self._transport.run(_ops.list_processes(self._target))

    def kill(self, pid: int) -> bool:
        """SIGKILLs a process; False if there is no such pid."""
        return self._transport.run(_ops.kill_process(self._target, pid))

    def send_stdin(self, pid: int, data: str | bytes) -> None:
        """Writes to a process's stdin."""
        self._transport.run(_ops.send_stdin(self._target, pid, data))

    def close_stdin(self, pid: int) -> None:
        """Closes a process's stdin."""
        self._transport.run(_ops.close_stdin(self._target, pid))
