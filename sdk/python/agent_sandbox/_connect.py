"""Connect protocol framing (JSON codec): envelopes are [flags u8][len u32 BE][json]."""

from __future__ import annotations

import json
import struct
from typing import Any

END_STREAM_FLAG = 0x02
COMPRESSED_FLAG = 0x01
_HEADER = struct.Struct(">BI")


def encode_envelope(message: dict[str, Any]) -> bytes:
    """Frames one request message for a server-streaming call."""
    payload = json.dumps(message).encode()
    return _HEADER.pack(0, len(payload)) + payload


class EnvelopeDecoder:
    """Incremental decoder: feed response bytes, get whole messages back.

    The end-of-stream frame is not a message: it sets `ended` and, if the call
    failed, `end_error` ({"code", "message"}).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.ended = False
        self.end_error: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Returns the messages completed by `chunk` (none after the end frame)."""
        self._buffer += chunk
        messages = []
        while not self.ended and len(self._buffer) >= _HEADER.size:
            flags, length = _HEADER.unpack_from(self._buffer)
            if len(self._buffer) < _HEADER.size + length:
                break
            payload = bytes(self._buffer[_HEADER.size:_HEADER.size + length])
            del self._buffer[:_HEADER.size + length]
            if flags & COMPRESSED_FLAG:
                raise ValueError(
                    "server sent a compressed Connect frame; the SDK asks for identity")
            body = json.loads(payload or b"{}")
            if flags & END_STREAM_FLAG:
                self.ended = True
                self.end_error = body.get("error")
            else:
                messages.append(body)
        return messages
