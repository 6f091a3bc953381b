"""The dashboard's browser tests: a daemon of their own and Debian's chromium,
driven by Playwright's Python package (its own browser download would need the
internet). Every page load goes to the loopback daemon only."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from dashboard_pages import SCREENSHOTS
from harness import ABX_BIN, Daemon, private_state_dir, start_daemon, stop_daemon

CHROMIUM = Path("/usr/bin/chromium")
# Every request but to loopback goes to a proxy that is not there (port 9, discard; Chromium
# never proxies loopback), and no name resolves: nothing leaves the machine. Not Playwright's
# request routing: it holds each request until the test's thread next calls Playwright, so a
# page's request made while the test waited in httpx or a sleep stalled.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--proxy-server=http://127.0.0.1:9",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]

sync_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM.exists():
    pytest.skip("needs Debian's chromium (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def dash_daemon() -> Daemon:
    state = private_state_dir()
    d = start_daemon(state / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    yield d
    stop_daemon(d, teams=("second",))
    # The log outlives the private dir, for a failure's post-mortem.
    SCREENSHOTS.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(d.data_dir / "daemon.log", SCREENSHOTS.parent / "dashboard-daemon.log")
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def second_team_key(dash_daemon: Daemon) -> str:
    made = subprocess.run([str(ABX_BIN), "keys", "create", "--team", "second", "--name", "other"],
                          env=dash_daemon.env(), capture_output=True, text=True, timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    return next(w for w in made.stdout.split() if w.startswith("e2b_"))


# One browser per test (about a second each): each dashboard page holds two
# responses open (the event stream and a terminal's), and a fresh browser
# keeps one test's connections from holding up the next's requests.
@pytest.fixture
def browser():
    with sync_api.sync_playwright() as playwright:
        b = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                       headless=True)
        yield b
        b.close()


@pytest.fixture(params=["light", "dark"])
def page(request, browser, dash_daemon: Daemon):
    context = browser.new_context(color_scheme=request.param, viewport={"width": 1280, "height": 800})
    p = context.new_page()
    p.scheme = request.param
    yield p
    context.close()

