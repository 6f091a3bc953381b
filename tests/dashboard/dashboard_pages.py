"""What the dashboard's browser tests do on a page: log in, save a screenshot. A module of
its own, not conftest.py: pytest's full run imports several conftest modules, and
`from conftest import ...` found another directory's."""
from __future__ import annotations

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
