"""`terminal`: a PTY shell over a WebSocket on the server's own port (GET /terminal with
`Upgrade: websocket`), so it needs no second port through a sandbox's port proxy.

Protocol: binary frames both ways are the terminal's bytes; a text frame from the client is
JSON, {"type": "input", "data": "..."} or {"type": "resize", "cols": N, "rows": N}; when the
shell exits the server sends {"type": "exit", "exit_code": N} and closes the socket."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import shutil
import signal
import socket
import struct
import subprocess
import termios
import threading
from typing import Any

from ..api import Call, Upgraded, row
from ..errors import HttpError, bad_input
from .file_ops import checked_path

CLOSE_WAIT = 5.0


def _shell() -> str:
    for candidate in (os.environ.get("SHELL"), "/bin/bash", "/bin/sh"):
        if candidate and shutil.which(candidate):
            return candidate
    return "/bin/sh"


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _take_terminal() -> None:  # runs in the child between fork and exec, after setsid
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def terminal(call: Call) -> Upgraded:
    http = call.http
    if http is None or http.headers.get("Upgrade", "").lower() != "websocket":
        raise HttpError(400, "GET /terminal is a WebSocket endpoint: connect with a WebSocket "
                        "client (Upgrade: websocket)")
    cols, rows = call.args["cols"], call.args["rows"]
    if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
        raise bad_input("cols" if not 1 <= cols <= 1000 else "rows", "must be 1 to 1000")
    cwd = checked_path(call.args["cwd"], "cwd") if call.args["cwd"] else None
    if cwd is not None and not os.path.isdir(cwd):
        raise bad_input("cwd", f"{cwd} is not a directory")
    try:
        from websockets.http11 import Request
        try:
            from websockets.server import ServerProtocol
        except ImportError:  # websockets 10 (Debian bookworm's) names it ServerConnection
            from websockets.server import ServerConnection as ServerProtocol
    except ImportError:
        raise HttpError(503, "the terminal needs the websockets package (pip install "
                        "websockets)") from None
    protocol = ServerProtocol()
    head = http.requestline + "\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in http.headers.items()) + "\r\n"
    protocol.receive_data(head.encode("latin-1"))
    request = protocol.events_received()[0]
    if not isinstance(request, Request):
        raise HttpError(400, "not a WebSocket handshake")
    response = protocol.accept(request)
    protocol.send_response(response)
    sock: socket.socket = http.connection
    sock.sendall(b"".join(protocol.data_to_send()))
    if response.status_code != 101:
        return Upgraded()
    command = call.args["cmd"]
    argv = ["/bin/sh", "-c", command] if command else [_shell(), "-i"]
    Session(protocol, sock, argv, cwd, cols, rows).run()
    return Upgraded()


class Session:
    """One shell on one PTY, relayed to one WebSocket until either side ends."""

    def __init__(self, protocol: Any, sock: socket.socket, argv: list[str], cwd: str | None,
                 cols: int, rows: int) -> None:
        self.protocol = protocol
        self.sock = sock
        self.lock = threading.Lock()  # the protocol object is not thread-safe
        self.closed = threading.Event()
        self.master, slave = pty.openpty()
        _set_size(self.master, cols, rows)
        env = {**os.environ, "TERM": os.environ.get("TERM", "xterm-256color")}
        try:
            self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                            cwd=cwd, env=env, start_new_session=True,
                                            preexec_fn=_take_terminal)
        finally:
            os.close(slave)

    def _flush(self) -> None:
        data = b"".join(self.protocol.data_to_send())
        if data:
            self.sock.sendall(data)

    def run(self) -> None:
        reader = threading.Thread(target=self._relay_output, daemon=True)
        reader.start()
        try:
            self._relay_input()
        finally:
            self.closed.set()
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGHUP)
                try:
                    self.process.wait(2)
                except subprocess.TimeoutExpired:
                    os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait()
            reader.join()
            os.close(self.master)

    def _relay_output(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the shell and everything on the terminal are gone
                data = b""
            if not data:
                break
            try:
                with self.lock:
                    self.protocol.send_binary(data)
                    self._flush()
            except OSError:
                return
        code = self.process.wait()
        try:
            with self.lock:
                self.protocol.send_text(json.dumps({"type": "exit", "exit_code": code}).encode())
                self.protocol.send_close(1000, "shell exited")
                self._flush()
        except Exception:  # the client already closed
            pass
        if not self.closed.wait(CLOSE_WAIT):  # the client never answered the close
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)

    def _relay_input(self) -> None:
        from websockets.frames import Opcode

        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            with self.lock:
                if data:
                    self.protocol.receive_data(data)
                else:
                    self.protocol.receive_eof()
                events = self.protocol.events_received()
                try:
                    self._flush()  # pongs, the close reply
                except OSError:
                    return
            for event in events:
                if event.opcode == Opcode.BINARY:
                    self._write(event.data)
                elif event.opcode == Opcode.TEXT:
                    self._text(bytes(event.data).decode(errors="replace"))
            if not data or self.protocol.close_expected() or self.protocol.state.name == "CLOSED":
                return

    def _text(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self._write(text.encode())
        elif message.get("type") == "resize":
            cols, rows = message.get("cols"), message.get("rows")
            if isinstance(cols, int) and isinstance(rows, int) and 0 < cols < 1001 \
                    and 0 < rows < 1001:
                _set_size(self.master, cols, rows)
        elif message.get("type") == "input" and isinstance(message.get("data"), str):
            self._write(message["data"].encode())

    def _write(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(self.master, bytes(data))


ROWS = [
    row("GET", "/terminal", "terminal", terminal,
        "WebSocket (Upgrade) to a PTY shell: binary frames are terminal bytes; text frames "
        "JSON input/resize; ends with {\"type\": \"exit\", \"exit_code\"}",
        {"cmd": {"type": ["string", "null"], "default": None},
         "cwd": {"type": ["string", "null"], "default": None},
         "cols": {"type": "integer", "default": 80},
         "rows": {"type": "integer", "default": 24}}),
]
