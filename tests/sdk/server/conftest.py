"""Fixtures: one server with every group for the module's tests."""
from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from running_server import Running


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    running = Running("all")
    yield running
    running.stop()


@pytest.fixture
def http(server: Running) -> httpx.Client:
    return server.http
