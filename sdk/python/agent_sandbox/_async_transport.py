"""The async client's HTTP layer: drives the shared operations with httpx.AsyncClient."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncGenerator
from typing import Any, Callable, TypeVar, Union

import httpx

from . import _daemon, _ops
from ._config import ConnectionConfig
from ._http import Call, error_from_response, retry_delay, transport_errors
from ._streams import ConnectMessages, NdjsonMessages
from .errors import SandboxException

Decoder = Union[ConnectMessages, NdjsonMessages]
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
    """One httpx.AsyncClient (HTTP/1.1) per Sandbox, for both planes."""

    def __init__(self, config: ConnectionConfig) -> None:
        self.config = config
        self.client = httpx.AsyncClient(timeout=config.request_timeout,
                                        limits=httpx.Limits(max_keepalive_connections=20))

    async def send(self, call: Call, stream: bool = False) -> httpx.Response:
        """Sends `call`, retrying 429s; raises the typed error for any other failure."""
        attempt = 0
        while True:
            with transport_errors(call):
                request = self.client.build_request(call.method, call.url, **call.send_kwargs())
                response = await self.client.send(request, stream=stream)
                if response.status_code < 400:
                    return response
                body = await response.aread()
                await response.aclose()
            delay = retry_delay(response.status_code, response.headers, attempt)
            if delay is None:
                raise error_from_response(call, response.status_code, body)
            attempt += 1
            await asyncio.sleep(delay)

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

    async def ensure_local_daemon(self, reresolve: Callable[[], ConnectionConfig]) -> None:
        """For the local provider: makes sure a daemon answers, starting one if needed."""
        if self.config.provider != "local" or self.config.api_url in _daemon.healthy_urls:
            return
        if await self._healthy(self.config.api_url):
            return
        await asyncio.to_thread(_daemon.start_daemon)
        deadline = time.monotonic() + _daemon.HEALTH_WAIT
        while time.monotonic() < deadline:
            self.config = reresolve()
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
        """Closes every connection."""
        await self.client.aclose()

