"""Templates on our own daemon API (/abx/v1/templates): build, list, inspect, remove.

    info = await Template.build("base", on_progress=print)
    names = [t.name for t in await Template.list()]

Local provider only: E2B's clouds build templates their own way.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import httpx

from . import _config
from .errors import InvalidArgumentError, NotFoundError, SandboxException

PREFIX = "/abx/v1/templates"


@dataclass(frozen=True)
class TemplateInfo:
    """One template as the daemon describes it."""

    name: str
    resolved: str
    source: str
    built: bool
    size_bytes: int
    created_ms: int
    env: Dict[str, str] = field(default_factory=dict)
    workdir: str = ""
    user: str = ""

    @staticmethod
    def from_json(body: Dict[str, Any]) -> "TemplateInfo":
        return TemplateInfo(
            name=body.get("name", ""), resolved=body.get("resolved", ""),
            source=body.get("source", ""), built=bool(body.get("built", True)),
            size_bytes=int(body.get("sizeBytes", 0)), created_ms=int(body.get("createdMs", 0)),
            env=dict(body.get("env") or {}), workdir=body.get("workdir", ""),
            user=body.get("user", ""))


class TemplateBuildError(SandboxException):
    """A build failed; the message holds the failing step and the last lines of its output."""


def _raise_for(response: httpx.Response, what: str) -> None:
    if response.status_code < 300:
        return
    try:
        message = response.json().get("message", response.text)
    except ValueError:
        message = response.text
    if response.status_code == 404:
        raise NotFoundError(f"{what}: {message}")
    if response.status_code in (400, 409):
        raise InvalidArgumentError(f"{what}: {message}")
    raise SandboxException(f"{what}: HTTP {response.status_code}: {message}")


class Template:
    """Class methods over the local daemon's templates."""

    @staticmethod
    def _config(api_key: Optional[str], api_url: Optional[str]) -> _config.ConnectionConfig:
        config = _config.resolve("local", api_key, api_url, None, None)
        if not config.api_url:
            raise InvalidArgumentError(
                "no local daemon found: start one with `abx daemon start` or pass api_url=")
        return config

    @staticmethod
    def _url(config: _config.ConnectionConfig, name: str = "", suffix: str = "") -> str:
        path = PREFIX + ("/" + urllib.parse.quote(name, safe="") if name else "") + suffix
        return config.api_url + path

    @classmethod
    async def list(cls, api_key: Optional[str] = None,
                   api_url: Optional[str] = None) -> List[TemplateInfo]:
        config = cls._config(api_key, api_url)
        async with httpx.AsyncClient(timeout=config.request_timeout) as client:
            response = await client.get(cls._url(config), headers=config.control_headers())
        _raise_for(response, "list templates")
        return [TemplateInfo.from_json(t) for t in response.json().get("templates", [])]

    @classmethod
    async def get(cls, name: str, api_key: Optional[str] = None,
                  api_url: Optional[str] = None) -> TemplateInfo:
        config = cls._config(api_key, api_url)
        async with httpx.AsyncClient(timeout=config.request_timeout) as client:
            response = await client.get(cls._url(config, name), headers=config.control_headers())
        _raise_for(response, f"template {name!r}")
        return TemplateInfo.from_json(response.json())

    @classmethod
    async def remove(cls, name: str, force: bool = False, api_key: Optional[str] = None,
                     api_url: Optional[str] = None) -> None:
        """Removes a stored template; refused while sandboxes use it unless `force`."""
        config = cls._config(api_key, api_url)
        params = {"force": "true"} if force else {}
        async with httpx.AsyncClient(timeout=config.request_timeout) as client:
            response = await client.delete(cls._url(config, name), params=params,
                                           headers=config.control_headers())
        _raise_for(response, f"remove template {name!r}")

    @classmethod
    async def build(cls, name: str, no_cache: bool = False,
                    on_progress: Optional[Callable[[str], None]] = None,
                    api_key: Optional[str] = None, api_url: Optional[str] = None) -> TemplateInfo:
        """Builds `name` from its spec (templates/<name>/ on the daemon's side), waiting for it."""
        config = cls._config(api_key, api_url)
        body = {"noCache": no_cache}
        timeout = httpx.Timeout(config.request_timeout, read=None)
        async with httpx.AsyncClient(timeout=timeout) as client:
            async with client.stream("POST", cls._url(config, name, "/build"), json=body,
                                     headers=config.control_headers()) as response:
                if response.status_code >= 300:
                    await response.aread()
                    _raise_for(response, f"build template {name!r}")
                async for line in response.aiter_lines():
                    result = _build_event(line, on_progress)
                    if result is not None:
                        return result
        raise TemplateBuildError(f"build of {name!r} ended without a result; see the daemon log")


def _build_event(line: str, on_progress: Optional[Callable[[str], None]]) -> Optional[TemplateInfo]:
    if not line.strip():
        return None
    event = json.loads(line)
    if "progress" in event:
        if on_progress:
            on_progress(event["progress"])
        return None
    if "error" in event:
        raise TemplateBuildError(event["error"].get("message", "template build failed"))
    return TemplateInfo.from_json(event["done"])
