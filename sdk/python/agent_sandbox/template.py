"""Templates on our own daemon API (/abx/v1/templates): build, import, list, inspect, remove.

    info = await Template.build("base", on_progress=print)
    info = await Template.build("my-app", path="./app", build_args={"VERSION": "2"})
    info = await Template.import_image("imported", "./image.tar")
    names = [t.name for t in await Template.list()]

Local provider only: E2B's clouds build templates their own way.
"""

from __future__ import annotations

import asyncio
import builtins
import io
import json
import os
import stat
import tarfile
import tempfile
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

import httpx

from . import _clients, _config
from ._config import ConnectionConfig
from .errors import (
    InvalidArgumentException,
    NotFoundException,
    SandboxException,
    TemplateBuildException,
)
from .errors import TemplateBuildError as TemplateBuildError  # the old name, re-exported

PREFIX = "/abx/v1/templates"
# A Sandboxfile given apart from its context travels inside the context's tar under this name.
UPLOADED_SANDBOXFILE = ".abx-sandboxfile"
UPLOAD_CHUNK = 1 << 16

PathLike = Union[str, "os.PathLike[str]"]
ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class TemplateInfo:
    """One template as the daemon describes it."""

    name: str
    resolved: str
    source: str
    built: bool
    size_bytes: int
    created_ms: int
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = ""
    user: str = ""
    layers: int = 0  # overlay layers it is made of (0 for templates that are not layered)
    start_cmd: str = ""  # run at every create (a Sandboxfile's CMD/ENTRYPOINT, a commands.py)
    ready_cmd: str = ""  # the create returns once this exits 0

    @staticmethod
    def from_json(body: dict[str, Any]) -> TemplateInfo:
        return TemplateInfo(
            name=body.get("name", ""), resolved=body.get("resolved", ""),
            source=body.get("source", ""), built=bool(body.get("built", True)),
            size_bytes=int(body.get("sizeBytes", 0)), created_ms=int(body.get("createdMs", 0)),
            env=dict(body.get("env") or {}), workdir=body.get("workdir", ""),
            user=body.get("user", ""), layers=int(body.get("layers", 0) or 0),
            start_cmd=body.get("startCmd") or "", ready_cmd=body.get("readyCmd") or "")


def _raise_for(response: httpx.Response, what: str) -> None:
    if response.status_code < 300:
        return
    try:
        message = response.json().get("message", response.text)
    except ValueError:
        message = response.text
    if response.status_code == 404:
        raise NotFoundException(f"{what}: {message}")
    if response.status_code in (400, 409):
        raise InvalidArgumentException(f"{what}: {message}")
    raise SandboxException(f"{what}: HTTP {response.status_code}: {message}")


class Template:
    """Class methods over the local daemon's templates."""

    @staticmethod
    def _config(api_key: str | None, api_url: str | None) -> ConnectionConfig:
        config = _config.resolve("local", api_key, api_url, None, None)
        if not config.api_url:
            raise InvalidArgumentException(
                "no local daemon found: start one with `abx daemon start` or pass api_url=")
        return config

    @staticmethod
    def _url(config: ConnectionConfig, name: str = "", suffix: str = "") -> str:
        path = PREFIX + ("/" + urllib.parse.quote(name, safe="") if name else "") + suffix
        return config.api_url + path

    @classmethod
    async def list(cls, api_key: str | None = None,
                   api_url: str | None = None) -> builtins.list[TemplateInfo]:
        """Every stored template.

        :param api_key: the daemon's API key (default: found like the `abx` CLI does)
        :param api_url: the daemon's URL (default: found like the `abx` CLI does)
        :return: one TemplateInfo per template
        :raises InvalidArgumentException: no local daemon was found
        """
        config = cls._config(api_key, api_url)
        response = await _client(config).get(cls._url(config), headers=config.control_headers(),
                                             timeout=config.request_timeout)
        _raise_for(response, "list templates")
        return [TemplateInfo.from_json(t) for t in response.json().get("templates", [])]

    @classmethod
    async def get(cls, name: str, api_key: str | None = None,
                  api_url: str | None = None) -> TemplateInfo:
        """One template's description.

        :param name: template name, e.g. "base"
        :return: its TemplateInfo
        :raises NotFoundException: there is no such template
        """
        config = cls._config(api_key, api_url)
        response = await _client(config).get(cls._url(config, name),
                                             headers=config.control_headers(),
                                             timeout=config.request_timeout)
        _raise_for(response, f"template {name!r}")
        return TemplateInfo.from_json(response.json())

    @classmethod
    async def remove(cls, name: str, force: bool = False, api_key: str | None = None,
                     api_url: str | None = None) -> None:
        """Removes a stored template.

        :param name: template name
        :param force: remove it even while sandboxes use it
        :raises NotFoundException: there is no such template
        :raises InvalidArgumentException: sandboxes use it and `force` is False
        """
        config = cls._config(api_key, api_url)
        params = {"force": "true"} if force else {}
        response = await _client(config).delete(cls._url(config, name), params=params,
                                                headers=config.control_headers(),
                                                timeout=config.request_timeout)
        _raise_for(response, f"remove template {name!r}")

    @classmethod
    async def build(cls, name: str, no_cache: bool = False,
                    on_progress: ProgressFn | None = None,
                    api_key: str | None = None, api_url: str | None = None, *,
                    path: PathLike | None = None, dockerfile: PathLike | None = None,
                    build_args: dict[str, str] | None = None,
                    network: bool = True) -> TemplateInfo:
        """Builds template `name`, waiting for it; `on_progress` gets each progress line.

        Without `path` or `dockerfile`, builds it from its spec (templates/<name>/ on the
        daemon's side, e.g. "base"). With them, builds it from a Sandboxfile: `path` is the
        build context dir (its files are what COPY and ADD see) holding a `Sandboxfile` (or
        `Dockerfile`); `dockerfile` is the path of another one (like `abx template build -f`:
        as given, not inside the context; without `path`, its dir is the context).
        `build_args` set ARG values; `network=False` keeps RUN steps off the network.

        :param name: template name
        :param no_cache: rebuild every step
        :param on_progress: called with each progress line
        :return: the built template's TemplateInfo
        :raises TemplateBuildException: a step failed (the message names it and its last
            output lines)
        """
        config = cls._config(api_key, api_url)
        if path is None and dockerfile is None:
            if build_args or not network:
                raise InvalidArgumentException(
                    "build_args and network apply to Sandboxfile builds: pass path=")
            return await _follow(config, cls._url(config, name, "/build"),
                                 f"build template {name!r}", on_progress,
                                 json={"noCache": no_cache})
        context, extra = _sandboxfile_context(path, dockerfile)
        query = {"file": UPLOADED_SANDBOXFILE if extra else "Sandboxfile",
                 "buildArgs": json.dumps(dict(build_args or {}))}
        if no_cache:
            query["noCache"] = "true"
        if not network:
            query["network"] = "false"
        url = cls._url(config, name, "/build") + "?" + urllib.parse.urlencode(query)
        with tempfile.TemporaryDirectory(prefix="abx-upload-") as scratch:
            tar = Path(scratch) / "context.tar"
            await asyncio.to_thread(_pack_dir, context, tar, extra)
            return await _follow_upload(config, url, f"build template {name!r}", tar,
                                        on_progress)

    @classmethod
    async def import_image(cls, name: str, path: PathLike,
                           on_progress: ProgressFn | None = None,
                           api_key: str | None = None,
                           api_url: str | None = None) -> TemplateInfo:
        """Makes template `name` from an image: an OCI image layout dir, an oci-archive tar or
        a `docker save` tar. Its env, working dir and user become the template's defaults.

        :param name: template name
        :param path: the image
        :param on_progress: called with each progress line
        :return: the imported template's TemplateInfo
        :raises InvalidArgumentException: `path` does not exist or is no image
        """
        config = cls._config(api_key, api_url)
        image = Path(path).absolute()
        if not image.exists():
            raise InvalidArgumentException(
                f"{image} does not exist; give an OCI layout dir or an image tar")
        url = (cls._url(config, name, "/import") + "?"
               + urllib.parse.urlencode({"origin": str(image)}))
        what = f"import {image} as template {name!r}"
        if not image.is_dir():
            return await _follow_upload(config, url, what, image, on_progress)
        with tempfile.TemporaryDirectory(prefix="abx-upload-") as scratch:
            tar = Path(scratch) / "image.tar"
            await asyncio.to_thread(_pack_dir, image, tar, None)
            return await _follow_upload(config, url, what, tar, on_progress)


def _client(config: ConnectionConfig) -> httpx.AsyncClient:
    return _clients.async_client(_clients.uses_tls(config))


def _sandboxfile_context(path: PathLike | None,
                         dockerfile: PathLike | None) -> tuple[Path, bytes | None]:
    """The context dir, and the Sandboxfile's text when it is not the context's own."""
    if dockerfile is not None:
        file = Path(dockerfile)
        try:
            text = file.read_bytes()
        except OSError as e:
            raise InvalidArgumentException(f"cannot read {file}: {e.strerror}") from None
        context = Path(path) if path is not None else file.absolute().parent
    else:
        context, text = Path(path), None  # type: ignore[arg-type]
    if not context.is_dir():
        raise InvalidArgumentException(f"{context} is not a directory; give the build context dir")
    if text is None and not (context / "Sandboxfile").exists() \
            and not (context / "Dockerfile").exists():
        raise InvalidArgumentException(
            f"no Sandboxfile (or Dockerfile) in {context}; give one with dockerfile=")
    return context, text


def _pack_dir(root: Path, out: Path, sandboxfile: bytes | None) -> None:
    """Writes `root`'s files, dirs and symlinks (names relative to it) to the tar `out`, and
    `sandboxfile` as UPLOADED_SANDBOXFILE, as the CLI does."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for entry in [*dirnames, *sorted(filenames)]:
                full = os.path.join(dirpath, entry)
                mode = os.lstat(full).st_mode
                if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
                    tar.add(full, arcname=os.path.relpath(full, root), recursive=False)
        if sandboxfile is not None:
            info = tarfile.TarInfo(UPLOADED_SANDBOXFILE)
            info.size = len(sandboxfile)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(sandboxfile))


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(UPLOAD_CHUNK):
            yield chunk


async def _follow_upload(config: ConnectionConfig, url: str, what: str, tar: Path,
                         on_progress: ProgressFn | None) -> TemplateInfo:
    """Streams the tar `tar` as the request body, then follows the progress stream."""
    headers = {"Content-Type": "application/x-tar", "Content-Length": str(tar.stat().st_size)}
    return await _follow(config, url, what, on_progress, content=_file_chunks(tar),
                         headers=headers)


async def _follow(config: ConnectionConfig, url: str, what: str,
                  on_progress: ProgressFn | None, headers: dict[str, str] | None = None,
                  **body: Any) -> TemplateInfo:
    """POSTs to a build or import endpoint and follows its NDJSON stream to the outcome;
    `what` names the operation in errors."""
    timeout = httpx.Timeout(config.request_timeout, read=None)
    all_headers = {**config.control_headers(), **(headers or {})}
    async with _client(config).stream("POST", url, headers=all_headers, timeout=timeout,
                                      **body) as response:
        if response.status_code >= 300:
            await response.aread()
            _raise_for(response, what)
        async for line in response.aiter_lines():
            result = _build_event(line, on_progress)
            if result is not None:
                return result
    raise TemplateBuildException(f"{what}: the stream ended without a result; see the daemon log")


def _build_event(line: str, on_progress: ProgressFn | None) -> TemplateInfo | None:
    if not line.strip():
        return None
    event = json.loads(line)
    if "progress" in event:
        if on_progress:
            on_progress(event["progress"])
        return None
    if "error" in event:
        raise TemplateBuildException(event["error"].get("message", "template build failed"))
    return TemplateInfo.from_json(event["done"])
