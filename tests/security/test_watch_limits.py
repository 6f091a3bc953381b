"""Directory watches are host root's inotify instances: a sandbox's caller may hold only a
few at once, so no caller can take the host's inotify budget from host services."""
from __future__ import annotations

import httpx
import pytest

from harness import start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # the `host` template needs no build

PER_SANDBOX = 8  # src/daemon/dir_watch.cc kWatchesPerSandbox


@pytest.fixture
def sandbox(state_dir):
    d = start_daemon(state_dir / "state", shared_templates=False)
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host"})
            assert r.status_code == 201, r.text
        yield d, r.json()
    finally:
        stop_daemon(d)


def rpc(d, box: dict, method: str, body: dict) -> httpx.Response:
    headers = {"E2b-Sandbox-Id": box["sandboxID"], "E2b-Sandbox-Port": "49983",
               "X-Access-Token": box["envdAccessToken"], "Content-Type": "application/json"}
    return httpx.post(f"{d.url}/filesystem.Filesystem/{method}", json=body, headers=headers,
                      timeout=30)


def test_watchers_per_sandbox_are_capped_and_given_back(sandbox):
    d, box = sandbox
    ids = []
    for _ in range(PER_SANDBOX):
        r = rpc(d, box, "CreateWatcher", {"path": "/tmp"})
        assert r.status_code == 200, r.text
        ids.append(r.json()["watcherId"])
    refused = rpc(d, box, "CreateWatcher", {"path": "/tmp"})
    assert refused.status_code == 429, refused.text
    assert "the limit" in refused.json()["message"]
    assert rpc(d, box, "RemoveWatcher", {"watcherId": ids.pop()}).status_code == 200
    again = rpc(d, box, "CreateWatcher", {"path": "/tmp"})
    assert again.status_code == 200, "a removed watcher did not give its slot back"
    assert d.proc.poll() is None and httpx.get(d.url + "/health", timeout=10).status_code < 300
