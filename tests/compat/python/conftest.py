"""The real E2B SDKs pointed at the session daemon by the three env lines a user writes."""
from __future__ import annotations

from urllib.parse import urlparse

import pytest


@pytest.fixture(autouse=True)
def e2b_env(daemon, monkeypatch):
    monkeypatch.setenv("E2B_API_URL", daemon.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", daemon.url)
    monkeypatch.setenv("E2B_API_KEY", daemon.api_key)
    # Only get_host() reads the domain: {port}-{id}.localhost:<daemon port>.
    monkeypatch.setenv("E2B_DOMAIN", f"localhost:{urlparse(daemon.url).port}")
    return daemon


@pytest.fixture
def sandbox():
    from e2b import Sandbox

    sb = Sandbox.create(timeout=120)
    yield sb
    sb.kill()
