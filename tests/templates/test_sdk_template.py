"""agent_sandbox.Template against the daemon's /abx/v1/templates."""
from __future__ import annotations

import asyncio

import pytest

from agent_sandbox import NotFoundError, Template


def test_list_get_and_missing(template_daemon):
    kw = {"api_url": template_daemon.url, "api_key": template_daemon.api_key}

    async def scenario():
        names = {t.name for t in await Template.list(**kw)}
        assert {"base", "host", "code-interpreter-v1"} <= names
        host = await Template.get("host", **kw)
        assert host.resolved == "host"
        with pytest.raises(NotFoundError):
            await Template.get("no-such-template", **kw)
        with pytest.raises(NotFoundError):
            await Template.remove("no-such-template", **kw)

    asyncio.run(scenario())
