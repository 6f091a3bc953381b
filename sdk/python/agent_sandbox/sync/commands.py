"""`sandbox.commands` for the sync client."""

from __future__ import annotations

import builtins
import contextlib
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
        """Reads output (calling the callbacks) until the command ends.

        :return: its CommandResult
        :raises CommandExitException: it exited non-zero and `check` was set
        :raises TimeoutException: it ran past the `timeout` it was started with (it was killed)
        """
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
        """Sends SIGKILL to the command.

        :return: False if the process was already gone
        """
        return self._transport.run(_ops.kill_process(self._target, self.pid))

    def send_stdin(self, data: str | bytes) -> None:
        """Writes to the command's stdin (start it with `stdin=True`).

        :param data: text (UTF-8) or bytes
        """
        self._transport.run(_ops.send_stdin(self._target, self.pid, data))

    def close_stdin(self) -> None:
        """Closes stdin: the process reads EOF."""
        self._transport.run(_ops.close_stdin(self._target, self.pid))

    def disconnect(self) -> None:
        """Stops receiving output; the process keeps running (see `commands.connect`).

        A `wait()` running in another thread then stops with an error.
        """
        self._stream.abort()
        with contextlib.suppress(ValueError):  # "generator already executing": wait() runs
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
        handle = self._open(call, on_stdout, on_stderr, check)
        return handle if background else handle.wait()

    def connect(self, pid: int, timeout: float = 0, on_stdout: OutputHandler | None = None,
                on_stderr: OutputHandler | None = None, check: bool = True) -> CommandHandle:
        """Attaches to a running process's output (from now on).

        :param pid: its pid (from `list` or a handle)
        :param timeout: seconds to follow it (0: until it ends)
        :return: a CommandHandle
        :raises NotFoundException: no such process
        """
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
        """Processes started through the API that are still running.

        :return: their ProcessInfo
        """
        return self._transport.run(_ops.list_processes(self._target))

    def kill(self, pid: int) -> bool:
        """Sends SIGKILL to a process.

        :param pid: its pid
        :return: False if there is no such process
        """
        return self._transport.run(_ops.kill_process(self._target, pid))

    def send_stdin(self, pid: int, data: str | bytes) -> None:
        """Writes to a process's stdin.

        :param pid: its pid
        :param data: text (UTF-8) or bytes
        :raises NotFoundException: no such process
        """
        self._transport.run(_ops.send_stdin(self._target, pid, data))

    def close_stdin(self, pid: int) -> None:
        """Closes a process's stdin: it reads EOF.

        :param pid: its pid
        :raises NotFoundException: no such process
        """
        self._transport.run(_ops.close_stdin(self._target, pid))
