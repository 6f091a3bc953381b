"""`sandbox.files` for the async client."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Callable, Literal, overload

import httpx

from . import _ops
from ._async_transport import AsyncMessageStream, AsyncTransport, call_handler
from ._http import Call, transport_errors
from .errors import SandboxException
from .models import EntryInfo, FileData, FilesystemEvent, WriteEntry, WriteInfo

EventHandler = Callable[[FilesystemEvent], object]


class Filesystem:
    """Files inside one sandbox. Relative paths are relative to the user's home (/home/user)."""

    def __init__(self, transport: AsyncTransport, target: _ops.Target) -> None:
        self._transport = transport
        self._target = target

    @overload
    async def read(self, path: str, format: Literal["text"] = "text",
                   user: str | None = None) -> str: ...

    @overload
    async def read(self, path: str, format: Literal["bytes"], user: str | None = None) -> bytes: ...

    @overload
    async def read(self, path: str, format: Literal["stream"],
                   user: str | None = None) -> AsyncIterator[bytes]: ...

    async def read(self, path: str, format: str = "text",
                   user: str | None = None) -> str | bytes | AsyncIterator[bytes]:
        """Reads a file.

        :param path: its path (relative: to the user's home)
        :param format: "text" (UTF-8), "bytes", or "stream" (chunks, never loaded whole)
        :param user: user to read as
        :return: its content in `format`
        :raises NotFoundException: no such file
        """
        if format == "stream":
            call = _ops.read_call(self._target, path, user, stream=True)
            return _chunks(call, await self._transport.send(call, stream=True))
        if format not in ("text", "bytes"):
            raise ValueError(f"format must be 'text', 'bytes' or 'stream', not {format!r}")
        data = await self._transport.run(_ops.read_file(self._target, path, user))
        return data.decode() if format == "text" else data

    @overload
    async def write(self, path: str, data: FileData, user: str | None = None) -> WriteInfo: ...

    @overload
    async def write(self, path: Sequence[WriteEntry], data: None = None,
                    user: str | None = None) -> builtins.list[WriteInfo]: ...

    async def write(self, path: str | Sequence[WriteEntry], data: FileData | None = None,
                    user: str | None = None) -> WriteInfo | builtins.list[WriteInfo]:
        """Writes one file, or many in one request; parents are created, files replaced.

        :param path: the file's path, or a list of WriteEntry
        :param data: str, bytes or a file-like object (streamed) when `path` is a path
        :param user: user to write as (owner of the files)
        :return: WriteInfo of the file (a list of them for a list of entries)
        """
        written = await self._transport.run(_ops.write_files(self._target, path, data, user))
        if isinstance(path, str):
            return written[0] if written else WriteInfo(name=path.rsplit("/", 1)[-1], path=path)
        return written

    async def list(self, path: str, depth: int = 1,
                   user: str | None = None) -> builtins.list[EntryInfo]:
        """Entries of a directory.

        :param path: the directory
        :param depth: how many levels deep
        :param user: user to list as
        :return: their EntryInfo
        :raises NotFoundException: no such directory
        """
        return await self._transport.run(_ops.list_dir(self._target, path, depth, user))

    async def exists(self, path: str, user: str | None = None) -> bool:
        """Whether a path exists.

        :param path: the path
        :param user: user to look as
        :return: True if it exists
        """
        return await self._transport.run(_ops.exists(self._target, path, user))

    async def get_info(self, path: str, user: str | None = None) -> EntryInfo:
        """Type, size, mode, owner and times of a path.

        :param path: the path
        :param user: user to look as
        :return: its EntryInfo
        :raises NotFoundException: no such path
        """
        return await self._transport.run(_ops.stat(self._target, path, user))

    async def make_dir(self, path: str, user: str | None = None) -> bool:
        """Creates a directory and its parents.

        :param path: the directory
        :param user: user to create it as
        :return: False if it already existed
        """
        return await self._transport.run(_ops.make_dir(self._target, path, user))

    async def rename(self, old_path: str, new_path: str, user: str | None = None) -> EntryInfo:
        """Moves a file or directory.

        :param old_path: where it is
        :param new_path: where it goes
        :param user: user to move it as
        :return: EntryInfo at the new path
        :raises NotFoundException: `old_path` does not exist
        """
        return await self._transport.run(_ops.rename(self._target, old_path, new_path, user))

    async def remove(self, path: str, user: str | None = None) -> None:
        """Removes a file or a directory tree.

        :param path: the path
        :param user: user to remove it as
        :raises NotFoundException: no such path
        """
        await self._transport.run(_ops.remove(self._target, path, user))

    async def watch_dir(self, path: str, on_event: EventHandler, recursive: bool = False,
                        user: str | None = None) -> WatchHandle:
        """Calls `on_event` for each change in `path` until `stop()` is called.

        :param path: the directory
        :param on_event: called with each FilesystemEvent (may be a coroutine function)
        :param recursive: watch subdirectories too
        :param user: user to watch as
        :return: a WatchHandle
        :raises NotFoundException: no such directory
        """
        call = _ops.watch_call(self._target, path, recursive, user)
        stream = await self._transport.connect_stream(call)
        first = await stream.next_or_none()
        if first is None or "start" not in first:
            await stream.aclose()
            raise SandboxException(f"{call.subject}: expected a start event, got {first!r}")
        return WatchHandle(stream, on_event)


class WatchHandle:
    """A running directory watch."""

    def __init__(self, stream: AsyncMessageStream, on_event: EventHandler) -> None:
        self._stream = stream
        self._task = asyncio.create_task(self._deliver(on_event))

    async def _deliver(self, on_event: EventHandler) -> None:
        async for message in self._stream:
            event = message.get("filesystem")
            if event:
                await call_handler(on_event, _ops.filesystem_event(event))

    async def stop(self) -> None:
        """Stops watching and closes the stream."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._stream.aclose()


async def _chunks(call: Call, response: httpx.Response) -> AsyncIterator[bytes]:
    try:
        with transport_errors(call):
            async for chunk in response.aiter_bytes():
                yield chunk
    finally:
        await response.aclose()
