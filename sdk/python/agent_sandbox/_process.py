"""Process event handling shared by both clients: output decoding and the final result."""

from __future__ import annotations

import base64
import codecs
from typing import Any

from ._http import Call
from .errors import CommandExitException, SandboxException
from .models import CommandResult


class ProcessOutput:
    """Accumulates a process's events (start, data, end) into its result."""

    def __init__(self, call: Call) -> None:
        self._call = call
        self.pid: int | None = None
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.end: dict[str, Any] | None = None
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")("replace")
                          for name in ("stdout", "stderr", "pty")}

    def expect_start(self, message: dict[str, Any] | None) -> int:
        """The pid from the stream's first message, which must be the start event."""
        start = (message or {}).get("event", {}).get("start")
        if start is None:
            raise SandboxException(f"{self._call.subject}: expected a start event first, got "
                                   f"{message!r}")
        self.pid = int(start.get("pid", 0))
        return self.pid

    def handle(self, message: dict[str, Any]) -> tuple[str, str] | None:
        """Records one event; returns ("stdout"|"stderr", text) when there is output."""
        event = message.get("event", {})
        if "data" in event:
            for name, raw in event["data"].items():
                if name in self._decoders:
                    text = self._decoders[name].decode(base64.b64decode(raw))
                    return self._append(name, text)
        elif "end" in event:
            self.end = event["end"]
        return None

    def _append(self, name: str, text: str) -> tuple[str, str] | None:
        if not text:
            return None
        (self.stderr if name == "stderr" else self.stdout).append(text)
        return ("stderr" if name == "stderr" else "stdout", text)

    def result(self, check: bool) -> CommandResult:
        """The finished command's result; raises CommandExitException on non-zero if `check`."""
        if self.end is None:
            raise SandboxException(f"{self._call.subject}: the output stream ended before the "
                                   "process did; reconnect with commands.connect(pid)")
        for name, decoder in self._decoders.items():
            self._append(name, decoder.decode(b"", final=True))
        exit_code = int(self.end.get("exitCode", 0))
        error = self.end.get("error")
        if exit_code == 0 and not self.end.get("exited", True) and self.end.get("status"):
            exit_code = -1  # ended by a signal without an exit code
        stdout, stderr = "".join(self.stdout), "".join(self.stderr)
        if check and exit_code != 0:
            raise CommandExitException(stdout, stderr, exit_code, error)
        return CommandResult(stdout=stdout, stderr=stderr, exit_code=exit_code, error=error)
