"""`ProviderSandbox`: a sandbox plus its template's agent-sandbox-server (port 9000).

    sandbox = await ProviderSandbox.create(template="server", provider="local")
    print(await sandbox.server.call("hello", name="x"))

Everything past E2B's surface goes through here: the server's registered commands and its
capability groups (files, process, terminal, system, dev_tools, browser, agents), reached
through the provider's port proxy (what `get_host(9000)` names), so any provider that
proxies ports serves it."""

from __future__ import annotations

import asyncio
import base64
import builtins
import json
import time
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Callable

import httpx

from . import _ops
from ._async_transport import AsyncMessageStream, AsyncTransport, call_handler
from ._http import Call
from ._server_ops import (
    SERVER_PORT,
    ProcessOutput,
    ProcessResult,
    command_path,
    file_content,
    png,
    server_call,
    server_error,
    stream_timeout,
    terminal_url,
)
from ._streams import NdjsonMessages
from .errors import SandboxException, TimeoutException
from .sandbox import AsyncSandbox

OutputHandler = Callable[[str], Any]


class ProviderSandbox(AsyncSandbox):
    """An `AsyncSandbox` whose template runs agent-sandbox-server; `server` talks to it.

    Create and connect as `AsyncSandbox`
    (`await ProviderSandbox.create(template=..., provider=...)`); the blocking class is
    `agent_sandbox.sync.ProviderSandbox`.
    """

    def __init__(self, transport: AsyncTransport, target: _ops.Target) -> None:
        super().__init__(transport, target)
        self.server = Server(transport, target, SERVER_PORT)
        """The in-sandbox server on port 9000."""

    def server_on(self, port: int) -> Server:
        """A client for an agent-sandbox-server on another port.

        :param port: the port the other server listens on inside the sandbox (`server` is 9000)
        :return: its `Server` client, reached through the provider's port proxy
        """
        return Server(self._transport, self._target, port)


class _Part:
    def __init__(self, server: Server) -> None:
        self._server = server


class Server:
    """Client of one agent-sandbox-server inside a sandbox."""

    def __init__(self, transport: AsyncTransport, target: _ops.Target, port: int) -> None:
        self._transport = transport
        self._target = target
        self.port = port
        self.files = ServerFiles(self)
        """file_ops: read, write, list, stat, mkdir, delete, move."""
        self.process = ServerProcess(self)
        """process: run (streamed), start, list, kill."""
        self.system = ServerSystem(self)
        """system: OS, CPU, memory, disk."""
        self.dev_tools = ServerDevTools(self)
        """dev_tools: git status/diff/log, search, installed tools."""
        self.browser = ServerBrowser(self)
        """browser: navigate, screenshot, click, type, evaluate, content."""
        self.agents = ServerAgents(self)
        """agents: tool manifest and MCP over HTTP."""

    @property
    def url(self) -> str:
        """The server's base URL through the port proxy (`get_host(port)` with a scheme)."""
        return self._target.url(self.port, "")

    def _call(self, method: str, path: str, params: dict[str, Any] | None = None,
              body: Any = None, timeout: float | httpx.Timeout | None = None) -> Call:
        return server_call(self._target, self.port, method, path, params, body, timeout)

    async def request(self, method: str, path: str, params: dict[str, Any] | None = None,
                      body: Any = None, timeout: float | None = None) -> Any:
        """Any endpoint: its JSON answer, or the typed error for its JSON error.

        :param method: the HTTP method, e.g. "GET" or "POST"
        :param path: the endpoint's path, e.g. "/files/read"
        :param params: query parameters
        :param body: the JSON body
        :param timeout: seconds for the request (default: the connection's `request_timeout`)
        :return: the decoded JSON answer
        """
        call = self._call(method, path, params, body, timeout)
        response = await self._transport.send(call, make_error=server_error)
        return response.json()

    async def stream(self, method: str, path: str, body: Any = None,
                     timeout: float | httpx.Timeout | None = None) -> AsyncMessageStream:
        """An NDJSON endpoint's messages (close the stream, or read it to the end).

        :param method: the HTTP method, e.g. "POST"
        :param path: the endpoint's path, e.g. "/process/run"
        :param body: the JSON body
        :param timeout: seconds (or an `httpx.Timeout`) for the connection and between messages
        :return: the stream of decoded messages
        """
        call = self._call(method, path, None, body, timeout)
        response = await self._transport.send(call, stream=True, make_error=server_error)
        return AsyncMessageStream(call, response, NdjsonMessages(call))

    async def describe(self) -> dict[str, Any]:
        """GET /: groups, endpoints and commands with their JSON schemas."""
        return await self.request("GET", "/")  # type: ignore[no-any-return]

    async def capabilities(self) -> dict[str, Any]:
        """Enabled and disabled groups and the command names."""
        return await self.request("GET", "/capabilities")  # type: ignore[no-any-return]

    async def health(self) -> bool:
        """True if the server answers /health."""
        try:
            await self.request("GET", "/health", timeout=5.0)
        except SandboxException:
            return False
        return True

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Waits until the server answers /health.

        :param timeout: seconds to wait at most
        :raises TimeoutException: it did not answer within `timeout` seconds
        """
        deadline = time.monotonic() + timeout
        while not await self.health():
            if time.monotonic() >= deadline:
                raise TimeoutException(
                    f"agent-sandbox-server on port {self.port} of sandbox "
                    f"{self._target.sandbox_id} did not answer within {timeout} s; see "
                    f"`abx logs {self._target.sandbox_id}`")
            await asyncio.sleep(0.2)

    async def info(self) -> dict[str, Any]:
        """Version, host name, pid, uptime, enabled groups."""
        return await self.request("GET", "/info")  # type: ignore[no-any-return]

    async def commands(self) -> builtins.list[dict[str, Any]]:
        """The registered commands with their argument schemas."""
        answer = await self.request("GET", "/commands")
        return answer["commands"]  # type: ignore[no-any-return]

    async def call(self, name: str, /, **args: Any) -> Any:
        """Calls a registered command with keyword arguments; its JSON result.

        :param name: the command's name, as registered with `@command` (see `commands()`)
        :param args: the command's arguments, by name, as its JSON schema describes them
        :raises InvalidArgumentException: an argument is missing, unknown or of the wrong type
        :raises NotFoundException: no such command
        :raises SandboxException: the command raised (its message)
        """
        answer = await self.request("POST", command_path(name), body=args)
        return answer["result"]

    def terminal(self, cmd: str | None = None, cols: int = 80, rows: int = 24) -> Terminal:
        """A PTY shell (or `cmd`) over a WebSocket: `async with server.terminal() as term:`.

        :param cmd: a command line to run in the PTY instead of a login shell
        :param cols: the terminal's width in columns (1 to 1000)
        :param rows: the terminal's height in rows (1 to 1000)
        :return: the `Terminal`, connected when entered
        """
        url = terminal_url(self._target, self.port, cmd, cols, rows)
        return Terminal(url, self._target.headers(self.port))


class ServerFiles(_Part):
    """The server's file_ops group."""

    async def read(self, path: str) -> str:
        """A text file's content.

        :param path: the file (relative to the server's cwd)
        """
        answer = await self._server.request("GET", "/files/read", {"path": path})
        return str(answer["content"])

    async def read_bytes(self, path: str) -> bytes:
        """A file's bytes.

        :param path: the file (relative to the server's cwd)
        """
        answer = await self._server.request("GET", "/files/read",
                                            {"path": path, "encoding": "base64"})
        return base64.b64decode(answer["content"])

    async def write(self, path: str, content: str | bytes, append: bool = False) -> int:
        """Writes (or appends); the number of bytes written. Missing parent directories are made.

        :param path: the file (relative to the server's cwd)
        :param content: text (written as UTF-8) or bytes
        :param append: True adds to the end instead of replacing the file
        """
        answer = await self._server.request(
            "POST", "/files/write", body={"path": path, "append": append, **file_content(content)})
        return int(answer["bytes_written"])

    async def list(self, path: str, depth: int = 1) -> builtins.list[dict[str, Any]]:
        """Entries under `path`, `depth` levels deep.

        :param path: the directory (relative to the server's cwd)
        :param depth: 1 (its own entries) to 16 levels
        """
        answer = await self._server.request("GET", "/files/list", {"path": path, "depth": depth})
        return answer["entries"]  # type: ignore[no-any-return]

    async def stat(self, path: str) -> dict[str, Any]:
        """Type, size, mode, mtime.

        :param path: the file or directory (relative to the server's cwd); a symlink: itself
        """
        return await self._server.request("GET", "/files/stat", {"path": path})  # type: ignore[no-any-return]

    async def mkdir(self, path: str, parents: bool = True) -> None:
        """Makes a directory.

        :param path: the directory (relative to the server's cwd)
        :param parents: True makes missing parents too, and an existing directory is no error
        """
        await self._server.request("POST", "/files/mkdir", body={"path": path, "parents": parents})

    async def delete(self, path: str, recursive: bool = False) -> None:
        """Deletes a file or (with recursive=True, a non-empty) directory.

        :param path: what to delete (relative to the server's cwd)
        :param recursive: True deletes a directory with everything in it
        """
        await self._server.request("POST", "/files/delete",
                                   body={"path": path, "recursive": recursive})

    async def move(self, source: str, destination: str, overwrite: bool = False) -> None:
        """Moves or renames.

        :param source: the path to move (relative to the server's cwd)
        :param destination: its new path
        :param overwrite: True replaces an existing `destination` (otherwise: a conflict error)
        """
        await self._server.request("POST", "/files/move", body={
            "source": source, "destination": destination, "overwrite": overwrite})


class ServerProcess(_Part):
    """The server's process group."""

    async def run(self, cmd: str | builtins.list[str], cwd: str | None = None,
                  env: dict[str, str] | None = None, timeout: float = 600,
                  stdin: str | None = None, on_stdout: OutputHandler | None = None,
                  on_stderr: OutputHandler | None = None) -> ProcessResult:
        """Runs a command to its end, passing output to the handlers as it comes.

        :param cmd: a shell command line (run by /bin/sh -c) or an argv list
        :param cwd: its working directory (default: the server's)
        :param env: variables added to the server's environment for it
        :param timeout: seconds before it is killed (0: no limit)
        :param stdin: text written to its standard input, which is then closed
        :param on_stdout: called with each piece of stdout as it arrives
        :param on_stderr: called with each piece of stderr as it arrives
        :return: its exit code and output
        """
        body = {"cmd": cmd, "cwd": cwd, "env": env or {}, "timeout": timeout, "stdin": stdin}
        messages = await self._server.stream("POST", "/process/run", body,
                                             timeout=stream_timeout(timeout))
        output = ProcessOutput()
        try:
            async for message in messages:
                chunk = output.add(message)
                if chunk is not None:
                    await call_handler(on_stdout if chunk[0] == "stdout" else on_stderr, chunk[1])
        finally:
            await messages.aclose()
        return output.result

    async def start(self, cmd: str | builtins.list[str], cwd: str | None = None,
                    env: dict[str, str] | None = None) -> int:
        """Starts a command in the background (output discarded); its pid.

        :param cmd: a shell command line (run by /bin/sh -c) or an argv list
        :param cwd: its working directory (default: the server's)
        :param env: variables added to the server's environment for it
        """
        answer = await self._server.request("POST", "/process/start",
                                            body={"cmd": cmd, "cwd": cwd, "env": env or {}})
        return int(answer["pid"])

    async def list(self) -> builtins.list[dict[str, Any]]:
        """The sandbox's processes."""
        return (await self._server.request("GET", "/process/list"))["processes"]  # type: ignore[no-any-return]

    async def kill(self, pid: int, signal: str = "TERM") -> None:
        """Signals a process.

        :param pid: the process's id (from `start` or `list`)
        :param signal: the signal's name: TERM, KILL, INT, HUP, ...
        """
        await self._server.request("POST", "/process/kill", body={"pid": pid, "signal": signal})


class ServerSystem(_Part):
    """The server's system group."""

    async def info(self, path: str = "/") -> dict[str, Any]:
        """OS, CPU, memory and the disk holding `path`.

        :param path: a path on the disk to describe
        """
        return await self._server.request("GET", "/system/info", {"path": path})  # type: ignore[no-any-return]


class ServerDevTools(_Part):
    """The server's dev_tools group."""

    async def tools(self) -> dict[str, str | None]:
        """Developer tools on PATH: name to path (None: missing)."""
        return (await self._server.request("GET", "/dev/tools"))["tools"]  # type: ignore[no-any-return]

    async def git_status(self, path: str = ".") -> dict[str, Any]:
        """Branch and changed files.

        :param path: a directory inside the git work tree (relative to the server's cwd)
        """
        return await self._server.request("GET", "/dev/git/status", {"path": path})  # type: ignore[no-any-return]

    async def git_diff(self, path: str = ".", staged: bool = False) -> str:
        """The diff text.

        :param path: a directory inside the git work tree (relative to the server's cwd)
        :param staged: True diffs the index (`git diff --cached`) instead of the work tree
        """
        answer = await self._server.request("GET", "/dev/git/diff",
                                            {"path": path, "staged": staged})
        return str(answer["diff"])

    async def git_log(self, path: str = ".", limit: int = 20) -> builtins.list[dict[str, Any]]:
        """The last commits.

        :param path: a directory inside the git work tree (relative to the server's cwd)
        :param limit: how many commits, 1 to 1000
        """
        answer = await self._server.request("GET", "/dev/git/log", {"path": path, "limit": limit})
        return answer["commits"]  # type: ignore[no-any-return]

    async def search(self, pattern: str, path: str = ".", regex: bool = False,
                     case_sensitive: bool = True,
                     max_results: int = 200) -> builtins.list[dict[str, Any]]:
        """Matching lines: {path, line, text}.

        :param pattern: the text (or, with `regex=True`, the Python regular expression) to find
        :param path: the file or directory to search (relative to the server's cwd)
        :param regex: True reads `pattern` as a regular expression
        :param case_sensitive: False ignores case
        :param max_results: stop after this many matches, 1 to 10000
        """
        answer = await self._server.request("POST", "/dev/search", body={
            "pattern": pattern, "path": path, "regex": regex, "case_sensitive": case_sensitive,
            "max_results": max_results})
        return answer["matches"]  # type: ignore[no-any-return]


class ServerBrowser(_Part):
    """The server's browser group (UnsupportedException where Playwright or Chromium is
    missing in the sandbox)."""

    async def navigate(self, url: str, wait_until: str = "load") -> dict[str, Any]:
        """Opens `url`; its final URL, title and HTTP status.

        :param url: an http(s), file, about or data URL
        :param wait_until: when navigation counts as done: "load", "domcontentloaded",
            "networkidle" or "commit"
        """
        return await self._server.request(  # type: ignore[no-any-return]
            "POST", "/browser/navigate", body={"url": url, "wait_until": wait_until},
            timeout=60.0)

    async def screenshot(self, full_page: bool = False) -> bytes:
        """The page as PNG bytes.

        :param full_page: True captures the whole scrollable page, not only the viewport
        """
        return png(await self._server.request("GET", "/browser/screenshot",
                                              {"full_page": full_page}, timeout=60.0))

    async def click(self, selector: str) -> None:
        """Clicks the element matching `selector`.

        :param selector: a Playwright selector, e.g. "text=Sign in" or "#submit"
        """
        await self._server.request("POST", "/browser/click", body={"selector": selector},
                                   timeout=60.0)

    async def type(self, selector: str, text: str) -> None:
        """Fills the input matching `selector`.

        :param selector: a Playwright selector of the input
        :param text: the text to fill it with
        """
        await self._server.request("POST", "/browser/type",
                                   body={"selector": selector, "text": text}, timeout=60.0)

    async def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's JSON value in the page.

        :param expression: the JavaScript expression, e.g. "document.title"
        """
        answer = await self._server.request("POST", "/browser/evaluate",
                                            body={"expression": expression}, timeout=60.0)
        return answer["result"]

    async def content(self) -> dict[str, Any]:
        """URL, title and HTML of the page."""
        return await self._server.request("GET", "/browser/content", timeout=60.0)  # type: ignore[no-any-return]


class ServerAgents(_Part):
    """The server's agents group."""

    async def tools(self) -> builtins.list[dict[str, Any]]:
        """The commands as tools: name, description, inputSchema."""
        return (await self._server.request("GET", "/agents/tools"))["tools"]  # type: ignore[no-any-return]

    async def mcp(self, method: str, params: dict[str, Any] | None = None,
                  request_id: int = 1) -> dict[str, Any]:
        """One MCP JSON-RPC request; the whole response (`result` or `error`).

        :param method: the MCP method, e.g. "tools/list" or "tools/call"
        :param params: its params, e.g. {"name": "hello", "arguments": {"name": "x"}}
        :param request_id: the JSON-RPC id
        """
        return await self._server.request("POST", "/agents/mcp", body={  # type: ignore[no-any-return]
            "jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})


class Terminal:
    """A PTY over a WebSocket: `send` keys, `recv` output bytes (None once the shell exited,
    then `exit_code` is set), `resize`."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        self._headers = headers
        self._socket: Any = None
        self.exit_code: int | None = None

    async def __aenter__(self) -> Terminal:
        from websockets.asyncio.client import connect

        try:
            self._socket = await connect(self.url, additional_headers=self._headers)
        except (OSError, httpx.HTTPError, Exception) as error:
            raise SandboxException(
                f"terminal: WebSocket to {self.url} failed ({error}); the provider's port proxy "
                "must relay WebSocket upgrades") from error
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def send(self, data: str | bytes) -> None:
        """Keys to the terminal.

        :param data: the keys, as text (sent as UTF-8) or bytes
        """
        await self._socket.send(data.encode() if isinstance(data, str) else data)

    async def resize(self, cols: int, rows: int) -> None:
        """Changes the terminal's size.

        :param cols: its width in columns (1 to 1000)
        :param rows: its height in rows (1 to 1000)
        """
        await self._socket.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))

    async def recv(self) -> bytes | None:
        """The next output bytes; None once the shell exited and the socket closed."""
        from websockets.exceptions import ConnectionClosed

        while True:
            try:
                message = await self._socket.recv()
            except ConnectionClosed:
                return None
            if isinstance(message, bytes):
                return message
            event = json.loads(message)
            if event.get("type") == "exit":
                self.exit_code = event.get("exit_code")

    async def output(self) -> AsyncIterator[bytes]:
        """Output bytes until the shell exits."""
        while (chunk := await self.recv()) is not None:
            yield chunk

    async def close(self) -> None:
        """Closes the WebSocket (the server then ends the shell)."""
        if self._socket is not None:
            await self._socket.close()
