"""The HTTP server: routes a request to its ENDPOINTS row, checks arguments, writes JSON."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import traceback
import urllib.parse
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import commands as _commands
from ._version import __version__
from .api import GROUPS, Call, Endpoint, Stream, Upgraded
from .errors import HttpError, bad_input
from .schema import check_object, from_query

GROUPS_ENV = "ABX_SERVER_GROUPS"
MAX_BODY = 64 * 1024 * 1024
log = logging.getLogger("agent_sandbox.server")


def parse_groups(groups: Iterable[str] | str | None) -> list[str]:
    """`core` plus the groups asked for (a list, or "a,b"; None: $ABX_SERVER_GROUPS, else all).

    Raises ValueError naming an unknown group."""
    if groups is None:
        groups = os.environ.get(GROUPS_ENV) or ",".join(GROUPS)
    if isinstance(groups, str):
        groups = [part.strip() for part in groups.split(",") if part.strip()]
    chosen = ["core"]
    for name in groups:
        if name == "all":
            return list(GROUPS)
        if name not in GROUPS:
            raise ValueError(f"unknown capability group {name!r} (groups: {', '.join(GROUPS)})")
        if name not in chosen:
            chosen.append(name)
    return chosen


_deferred: dict[str, Any] | None = None
"""While `python -m agent_sandbox.server` loads a commands.py: where its start() call's
arguments go (the command line's own arguments win)."""


class App:
    """What one server serves: its enabled groups, the commands and the shared state."""

    def __init__(self, groups: Iterable[str] | str | None = None,
                 commands: dict[str, _commands.Command] | None = None) -> None:
        from .endpoints import ENDPOINTS  # the table imports every group module

        self.groups = parse_groups(groups)
        self.commands = _commands.REGISTRY if commands is None else commands
        self.endpoints = ENDPOINTS
        self.started = time.monotonic()
        self.state: dict[str, Any] = {}  # per-group state (processes, browser), by group
        self.state_lock = threading.Lock()

    def close(self) -> None:
        """Stops what the groups keep running for later requests (the browser)."""
        with self.state_lock:
            browser = self.state.pop("browser", None)
        if browser is not None:
            browser.stop()

    def enabled_groups(self) -> list[str]:
        return [name for name in GROUPS if name in self.groups]

    def describe(self) -> dict[str, Any]:
        """GET /: groups, enabled endpoints and commands, with their schemas."""
        enabled = set(self.groups)
        return {
            "name": "agent-sandbox-server", "version": __version__,
            "groups": {name: {"enabled": name in enabled, "description": text}
                       for name, text in GROUPS.items()},
            "endpoints": [e.describe() for e in self.endpoints if e.group in enabled],
            "commands": ([c.describe() for c in self.commands.values()]
                         if "commands" in enabled else []),
        }

    def route(self, method: str, path: str) -> tuple[Endpoint, dict[str, str]]:
        """The row for `method path` and its path arguments; HttpError 404/405 otherwise."""
        allowed = []
        for endpoint in self.endpoints:
            path_args = _match(endpoint.path, path)
            if path_args is None:
                continue
            if endpoint.group not in self.groups:
                raise HttpError(404, f"{path}: the {endpoint.group!r} group is not enabled on "
                                f"this server (enabled: {', '.join(self.enabled_groups())}); "
                                f"enable it with start(groups=[...]) or ${GROUPS_ENV}")
            if endpoint.method == method:
                return endpoint, path_args
            allowed.append(endpoint.method)
        if allowed:
            raise HttpError(405, f"{path} takes {' or '.join(allowed)}, not {method}")
        raise HttpError(404, f"no endpoint {method} {path}; GET / lists them")


def _match(pattern: str, path: str) -> dict[str, str] | None:
    wanted = pattern.strip("/").split("/")
    given = path.strip("/").split("/")
    if len(wanted) != len(given):
        return None
    found: dict[str, str] = {}
    for want, part in zip(wanted, given):
        if want.startswith("{") and want.endswith("}"):
            if not part:
                return None
            found[want[1:-1]] = urllib.parse.unquote(part)
        elif want != part:
            return None
    return found


def with_defaults(endpoint: Endpoint, args: dict[str, Any]) -> dict[str, Any]:
    for name, schema in endpoint.schema.get("properties", {}).items():
        if name not in args and "default" in schema:
            args[name] = schema["default"]
    return args


class Handler(BaseHTTPRequestHandler):
    """One connection; HTTP/1.1 keep-alive, chunked NDJSON for streams."""

    protocol_version = "HTTP/1.1"
    server_version = f"agent-sandbox-server/{__version__}"
    server: Server

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)

    def _dispatch(self) -> None:
        app = self.server.app
        url = urllib.parse.urlsplit(self.path)
        try:
            body = self._read_body()
            endpoint, path_args = app.route(self.command, url.path)
            args = self._arguments(endpoint, url.query, body)
            result = endpoint.handler(Call(args, app, self, path_args))
        except HttpError as error:
            self._send_json(error.status, error.body())
            return
        except Exception as error:  # the handler's fault: a 500, and the server goes on
            log.error("%s %s failed:\n%s", self.command, url.path, traceback.format_exc())
            message = f"{type(error).__name__}: {error}"
            self._send_json(500, {"code": "internal", "message": message})
            return
        if isinstance(result, Upgraded):
            self.close_connection = True
        elif isinstance(result, Stream):
            self._send_stream(result)
        else:
            self._send_json(200, result)

    def _read_body(self) -> bytes:
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        if not length_text:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            self.close_connection = True
            raise HttpError(400, f"bad Content-Length {length_text!r}") from None
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            raise HttpError(413, f"request body of {length} bytes; the limit is {MAX_BODY}")
        return self.rfile.read(length)

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                self.close_connection = True
                raise HttpError(400, "bad chunk size in a chunked request body") from None
            if len(body) + size > MAX_BODY:
                self.close_connection = True
                raise HttpError(413, f"request body over the limit of {MAX_BODY} bytes")
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return bytes(body)
            body += self.rfile.read(size)
            self.rfile.readline(1024)  # the chunk's CRLF

    def _arguments(self, endpoint: Endpoint, query: str, body: bytes) -> dict[str, Any]:
        args: dict[str, Any] = from_query(endpoint.schema,
                                          urllib.parse.parse_qs(query, keep_blank_values=True))
        if body.strip():
            try:
                parsed = json.loads(body)
            except ValueError as error:
                raise bad_input("body", f"not JSON ({error})") from None
            if not isinstance(parsed, dict):
                raise bad_input("body", "expected a JSON object of arguments")
            args.update(parsed)
        check_object(endpoint.schema, args)
        return with_defaults(endpoint, args)

    def _send_json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode() + b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, stream: Stream) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for message in stream.messages:
                self._chunk(json.dumps(message).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):  # the client left; `close` cleans up
            self.close_connection = True
            return
        except Exception as error:  # mid-stream: the last line says what went wrong
            log.error("stream failed:\n%s", traceback.format_exc())
            self._chunk(json.dumps({"type": "error", "message": f"{error}"}).encode() + b"\n")
        finally:
            close = getattr(stream.messages, "close", None)
            if close is not None:
                close()
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    """A thread per connection; `app` says what is served."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        super().__init__(address, Handler)

    def server_close(self) -> None:
        super().server_close()
        self.app.close()


def make_server(port: int = 9000, groups: Iterable[str] | str | None = None,
                host: str = "0.0.0.0",
                commands: dict[str, _commands.Command] | None = None) -> Server:
    """A bound server, not yet serving (`serve_forever()`; port 0 picks a free one)."""
    return Server((host, port), App(groups, commands))


def start(port: int = 9000, groups: Iterable[str] | str | None = None,
          host: str = "0.0.0.0") -> None:
    """Serves the registered commands and the enabled groups until interrupted.

    :param port: TCP port (9000: the one templates and ProviderSandbox use)
    :param groups: capability groups besides `core` (list or "a,b"); None: $ABX_SERVER_GROUPS,
        else all of them
    :param host: address to listen on
    """
    if _deferred is not None:  # a commands.py being loaded by `python -m agent_sandbox.server`
        _deferred.update(port=port, groups=groups, host=host)
        return
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(message)s")
    server = make_server(port, groups, host)
    log.info("agent-sandbox-server %s on %s:%d, groups %s, commands %s", __version__, host,
             server.server_address[1], ",".join(server.app.groups),
             ",".join(server.app.commands) or "-")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
