"""SDK test helpers: coroutine tests run on a fresh event loop; connection arguments."""
from __future__ import annotations

import asyncio
import inspect
from typing import Any, Dict

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Runs `async def` tests with asyncio.run (no pytest-asyncio needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


@pytest.fixture(scope="session")
def conn(daemon) -> Dict[str, str]:
    """Keyword arguments pointing the SDK at the test daemon."""
    return {"api_url": daemon.url, "api_key": daemon.api_key}
