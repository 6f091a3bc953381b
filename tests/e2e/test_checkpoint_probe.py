"""Issue 33's first slice: the daemon says whether it can checkpoint sandboxes
to disk (CRIU) and, if not, why in one line; pause stays freeze-only then."""
from __future__ import annotations

import json
import shutil
import subprocess

import httpx
from harness import Daemon
from helpers import abx


def criu_check_passes() -> bool:
    criu = shutil.which("criu") or shutil.which("criu", path="/usr/local/sbin:/usr/sbin:/sbin")
    if not criu:
        return False
    return subprocess.run([criu, "check"], check=False, capture_output=True).returncode == 0


def test_info_api_says_whether_checkpoints_work(daemon: Daemon) -> None:
    r = httpx.get(f"{daemon.url}/abx/v1/info", headers={"X-API-KEY": daemon.api_key}, timeout=30)
    assert r.status_code == 200, r.text
    checkpoint = r.json()["checkpoint"]
    assert isinstance(checkpoint["available"], bool)
    if checkpoint["available"]:
        assert checkpoint["reason"] == ""
    else:
        reason = checkpoint["reason"]
        assert reason and "\n" not in reason
        if not criu_check_passes():
            assert "criu" in reason, reason  # no binary, or its check fails
    assert r.json()["version"]


def test_abx_info_without_an_id_shows_the_daemon(daemon: Daemon) -> None:
    r = abx(daemon, "info")
    assert r.returncode == 0, r.stderr
    line = next(line for line in r.stdout.splitlines() if line.startswith("checkpoints"))
    assert "available" in line
    as_json = json.loads(abx(daemon, "info", "--json").stdout)
    expected = "available" if as_json["checkpoint"]["available"] else "unavailable: "
    assert line.split(None, 1)[1].startswith(expected), line
