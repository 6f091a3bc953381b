"""`abx dashboard` names the page the daemon serves (and opens no browser here)."""
from __future__ import annotations

import subprocess

import httpx
import pytest
from harness import ABX_BIN

pytestmark = pytest.mark.offline


def test_abx_dashboard_prints_the_address_the_daemon_serves(dash_daemon):
    # No desktop: nothing to open a browser on.
    env = {k: v for k, v in dash_daemon.env().items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    r = subprocess.run([str(ABX_BIN), "dashboard"], env=env, capture_output=True, text=True, check=False,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == dash_daemon.url + "/dashboard"
    assert dash_daemon.api_key not in r.stdout + r.stderr  # the key is never printed
    page = httpx.get(r.stdout.strip(), timeout=10)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
