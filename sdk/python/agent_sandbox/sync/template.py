"""`Template` for the sync client: the async class's methods, run to completion."""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

from .. import _clients
from .. import template as _async
from ..template import PathLike, ProgressFn, TemplateInfo

T = TypeVar("T")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs `coroutine` on a loop of its own (in a worker thread if this thread runs one,
    as in Jupyter), closing that loop's connections after."""
    async def closing() -> T:
        try:
            return await coroutine
        finally:
            await _clients.close_loop_clients()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(closing())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, closing()).result()


class Template:
    """Templates on the local daemon (its own API; E2B's clouds build templates their way)."""

    @staticmethod
    def list(api_key: str | None = None,
             api_url: str | None = None) -> builtins.list[TemplateInfo]:
        """Every stored template.

        :param api_key: the daemon's API key (default: found like the `abx` CLI does)
        :param api_url: the daemon's URL (default: found like the `abx` CLI does)
        :return: one TemplateInfo per template
        :raises InvalidArgumentException: no local daemon was found
        """
        return _run(_async.Template.list(api_key, api_url))

    @staticmethod
    def get(name: str, api_key: str | None = None, api_url: str | None = None) -> TemplateInfo:
        """One template's description.

        :param name: template name, e.g. "base"
        :return: its TemplateInfo
        :raises NotFoundException: there is no such template
        """
        return _run(_async.Template.get(name, api_key, api_url))

    @staticmethod
    def remove(name: str, force: bool = False, api_key: str | None = None,
               api_url: str | None = None) -> None:
        """Removes a stored template.

        :param name: template name
        :param force: remove it even while sandboxes use it
        :raises NotFoundException: there is no such template
        :raises InvalidArgumentException: sandboxes use it and `force` is False
        """
        _run(_async.Template.remove(name, force, api_key, api_url))

    @staticmethod
    def build(name: str, no_cache: bool = False, on_progress: ProgressFn | None = None,
              api_key: str | None = None, api_url: str | None = None, *,
              path: PathLike | None = None, dockerfile: PathLike | None = None,
              build_args: dict[str, str] | None = None, network: bool = True) -> TemplateInfo:
        """Builds template `name` and waits for it; see `agent_sandbox.Template.build`.

        :param name: template name (without `path`/`dockerfile`: built from its spec)
        :param no_cache: rebuild every step
        :param on_progress: called with each progress line
        :param path: build context dir holding a `Sandboxfile` (or `Dockerfile`)
        :param dockerfile: another Sandboxfile to build from
        :param build_args: ARG values
        :param network: False keeps RUN steps off the network
        :return: the built template's TemplateInfo
        :raises TemplateBuildException: a step failed (the message names it)
        """
        return _run(_async.Template.build(name, no_cache, on_progress, api_key, api_url,
                                          path=path, dockerfile=dockerfile,
                                          build_args=build_args, network=network))

    @staticmethod
    def import_image(name: str, path: PathLike, on_progress: ProgressFn | None = None,
                     api_key: str | None = None, api_url: str | None = None) -> TemplateInfo:
        """Makes template `name` from an OCI layout dir, an oci-archive or a `docker save` tar.

        :param name: template name
        :param path: the image
        :param on_progress: called with each progress line
        :return: the imported template's TemplateInfo
        :raises InvalidArgumentException: `path` does not exist or is no image
        """
        return _run(_async.Template.import_image(name, path, on_progress, api_key, api_url))
