"""What the dashboard's browser tests do on a page: log in, save a screenshot. A module of
its own, not conftest.py: pytest's full run imports several conftest modules, and
`from conftest import ...` found another directory's."""
from __future__ import annotations

import time
from typing import Callable

import httpx
from harness import REPO, Daemon

SCREENSHOTS = REPO / "build" / "dashboard-screenshots"


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}-{page.scheme}.png"), full_page=True)


def log_in(page, daemon: Daemon, key: str | None = None) -> None:
    page.goto(daemon.url + "/dashboard")
    page.fill("#api-key", key or daemon.api_key)
    page.click("#login")
    page.wait_for_selector("#nav:not([hidden])")


def create_host_sandbox(daemon: Daemon, key: str, metadata: dict | None = None) -> str:
    r = httpx.post(daemon.url + "/sandboxes", headers={"X-API-KEY": key}, timeout=60,
                   json={"templateID": "host", "metadata": metadata or {}})
    assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def kill_sandbox(daemon: Daemon, sandbox_id: str, key: str | None = None) -> None:
    httpx.delete(f"{daemon.url}/sandboxes/{sandbox_id}", headers={"X-API-KEY": key or daemon.api_key},
                 timeout=60)


def make_key(daemon: Daemon, team: str, name: str, admin: bool = False) -> str:
    r = httpx.post(daemon.url + "/abx/v1/keys", headers={"X-API-KEY": daemon.api_key}, timeout=10,
                   json={"team": team, "name": name, "admin": admin})
    assert r.status_code == 201, r.text
    return r.json()["key"]


def wait_until(check: Callable[[], object], seconds: float) -> bool:
    """Whether `check()` came true within `seconds` (asked every 0.2 s)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return bool(check())
