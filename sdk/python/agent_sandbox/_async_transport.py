"""The async client's HTTP layer: drives the shared operations with httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncGenerator
from typing import Any, Callable, TypeVar, Union

import httpx

from . import _clients, _daemon, _ops
from ._config import ConnectionConfig
from ._http import (
    Call,
    closed_error,
    error_from_response,
    follow_daemon_address,
    moved_daemon,
    retry_delay,
    transport_errors,
)
from ._streams import ConnectMessages, NdjsonMessages, SseMessages
from .errors import SandboxException

Decoder = Union[ConnectMessages, NdjsonMessages, SseMessages]
ErrorMaker = Callable[[Call, int, bytes], SandboxException]
T = TypeVar("T")


async def call_handler(handler: Callable[[Any], Any] | None, value: Any) -> None:
    """Calls a user callback, awaiting it if it is a coroutine function."""
    if handler is None:
        return
    outcome = handler(value)
    if inspect.isawaitable(outcome):
        await outcome


class AsyncMessageStream:
    """Messages of one streamed response; close it (or read to the end) to free the connection."""

    def __init__(self, call: Call, response: httpx.Response, decoder: Decoder) -> None:
        self._call = call
        self._response = response
        self._decoder = decoder
        self._messages = self._read()

    def __aiter__(self) -> AsyncMessageStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        return await self._messages.__anext__()

    async def _read(self) -> AsyncGenerator[dict[str, Any], None]:
        try:
            with transport_errors(self._call):
                async for chunk in self._response.aiter_bytes():
                    for message in self._decoder.feed(chunk):
                        yield message
            self._decoder.finish()
        finally:
            await self._response.aclose()

    async def next_or_none(self) -> dict[str, Any] | None:
        """The next message, or None at the end of the stream."""
        try:
            return await self._messages.__anext__()
        except StopAsyncIteration:
            return None

    async def aclose(self) -> None:
        """Stops reading and closes the connection."""
        await self._messages.aclose()
        await self._response.aclose()


class AsyncTransport:
    """One Sandbox's view of the event loop's shared httpx.AsyncClient, for both planes."""

    def __init__(self, config: ConnectionConfig, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self._tls = _clients.uses_tls(config)
        self._client = client  # None: the running loop's shared one
        self._closed: tuple[bool, str] | None = None  # (killed, sandbox id) once unusable

    @property
    def client(self) -> httpx.AsyncClient:
        """The client given, else the running loop's shared client."""
        return self._client or _clients.async_client(self._tls)

    def mark_closed(self, sandbox_id: str, killed: bool) -> None:
        """From now on every call raises (SandboxNotFoundException after a kill)."""
        self._closed = (killed, sandbox_id)

    @property
    def killed(self) -> bool:
        """True once the sandbox was killed through this transport."""
        return self._closed is not None and self._closed[0]

    async def send(self, call: Call, stream: bool = False,
                   make_error: ErrorMaker = error_from_response) -> httpx.Response:
        """Sends `call`, retrying 429s (and a connect refused by a local daemon that moved);
        raises the typed error for any other failure."""
        if self._closed:
            raise closed_error(call, *self._closed)
        follow_daemon_address(self.config, call)
        attempt = 0
        followed = False
        while True:
            try:
                response = await self._send_once(call, stream)
            except SandboxException as error:
                if followed or not moved_daemon(self.config, call, error):
                    raise
                followed = True
                continue
            if response.status_code < 400:
                return response
            body = await response.aread()
            await response.aclose()
            delay = retry_delay(response.status_code, response.headers, attempt)
            if delay is None:
                raise make_error(call, response.status_code, body)
            attempt += 1
            await asyncio.sleep(delay)

    async def _send_once(self, call: Call, stream: bool) -> httpx.Response:
        with transport_errors(call):
            client = self.client
            request = client.build_request(call.method, call.url,
                                           **call.send_kwargs(self.config.request_timeout))
            return await client.send(request, stream=stream)

    async def run(self, op: _ops.Op[T]) -> T:
        """Drives a shared operation to its result."""
        try:
            call = next(op)
            while True:
                try:
                    response = await self.send(call)
                except SandboxException as error:
                    call = op.throw(error)
                else:
                    call = op.send(response)
        except StopIteration as done:
            result: T = done.value
            return result

    async def connect_stream(self, call: Call) -> AsyncMessageStream:
        """Opens a Connect server stream."""
        return AsyncMessageStream(call, await self.send(call, stream=True), ConnectMessages(call))

    async def ndjson_stream(self, call: Call) -> AsyncMessageStream:
        """Opens an NDJSON stream."""
        return AsyncMessageStream(call, await self.send(call, stream=True), NdjsonMessages(call))

    async def sse_stream(self, call: Call) -> AsyncMessageStream:
        """Opens a server-sent event stream: each event's data."""
        return AsyncMessageStream(call, await self.send(call, stream=True), SseMessages(call))

    async def ensure_local_daemon(self, reresolve: Callable[[], ConnectionConfig]) -> None:
        """For the local provider: makes sure a daemon answers, starting one if needed."""
        if self.config.provider != "local" or self.config.api_url in _daemon.healthy_urls:
            return
        if await self._healthy(self.config.api_url):
            return
        if not self.config.discovered:  # a URL the user gave: never start (or wait for) ours
            raise _daemon.explicit_url_dead(self.config.api_url)
        await asyncio.to_thread(_daemon.start_daemon)
        deadline = time.monotonic() + _daemon.HEALTH_WAIT
        while time.monotonic() < deadline:
            self.config = reresolve()
            self._tls = _clients.uses_tls(self.config)
            if await self._healthy(self.config.api_url):
                return
            await asyncio.sleep(0.1)
        raise _daemon.not_answering(self.config.api_url)

    async def _healthy(self, url: str) -> bool:
        if not url:
            return False
        try:
            response = await self.client.send(self.client.build_request(
                "GET", url + "/health", timeout=2.0))
        except httpx.HTTPError:
            return False
        if response.status_code < 300:
            _daemon.healthy_urls.add(url)
            return True
        return False

    async def aclose(self) -> None:
        """Unusable from now on; the shared connections stay open for other sandboxes."""
        if self._closed is None:
            self._closed = (False, "")

