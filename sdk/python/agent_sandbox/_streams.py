"""Decoders turning streamed response bytes into messages, shared by both clients."""

from __future__ import annotations

import json
from typing import Any

from ._connect import EnvelopeDecoder
from ._http import Call, error_from_code
from .errors import SandboxException


class ConnectMessages:
    """Messages of a Connect server stream; `finish` raises the call's error, if any."""

    def __init__(self, call: Call) -> None:
        self._call = call
        self._decoder = EnvelopeDecoder()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Messages completed by `chunk`."""
        return self._decoder.feed(chunk)

    def finish(self) -> None:
        """Called at EOF: raises if the stream failed or was cut before its end frame."""
        error = self._decoder.end_error
        if error:
            raise error_from_code(self._call, str(error.get("code", "unknown")),
                                  str(error.get("message", "")))
        if not self._decoder.ended:
            raise SandboxException(f"{self._call.subject}: the connection closed mid-stream; "
                                   "the sandbox may have been killed")


class NdjsonMessages:
    """One JSON object per `\\n`-terminated line (the code interpreter's /execute)."""

    def __init__(self, call: Call) -> None:
        self._call = call
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Objects on the lines completed by `chunk`."""
        self._buffer += chunk
        *lines, rest = bytes(self._buffer).split(b"\n")
        self._buffer = bytearray(rest)
        return [json.loads(line) for line in lines if line.strip()]

    def finish(self) -> None:
        """Called at EOF: a partial last line means the stream was cut."""
        if bytes(self._buffer).strip():
            raise SandboxException(f"{self._call.subject}: the connection closed mid-line")


class SseMessages:
    """The `data:` JSON of each server-sent event (blocks of `field: value` lines ended by a
    blank line); comments (`: keepalive`) and events without data are skipped."""

    def __init__(self, call: Call) -> None:
        self._call = call
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Objects of the events completed by `chunk`."""
        self._buffer += chunk
        *blocks, rest = bytes(self._buffer).replace(b"\r\n", b"\n").split(b"\n\n")
        self._buffer = bytearray(rest)
        return [message for message in map(self._data, blocks) if message is not None]

    @staticmethod
    def _data(block: bytes) -> dict[str, Any] | None:
        data = [line[5:].removeprefix(b" ") for line in block.split(b"\n")
                if line.startswith(b"data:")]
        return json.loads(b"\n".join(data)) if data else None

    def finish(self) -> None:
        """Called at EOF: a partial last event means the stream was cut."""
        if bytes(self._buffer).strip():
            raise SandboxException(f"{self._call.subject}: the connection closed mid-event")
