"""`abx env e2b` and `abx keys`: the configuration a user of the E2B SDKs writes."""
from __future__ import annotations

import httpx
import pytest
from e2b import Sandbox

from helpers import abx


@pytest.mark.offline
def test_abx_env_e2b_prints_the_five_lines(daemon):
    """`abx env e2b` (and `--export`) print E2B_API_URL, E2B_SANDBOX_URL, E2B_VOLUME_API_URL
    (volume content), E2B_API_KEY and E2B_DOMAIN, which the SDK's get_host(port) builds
    sandbox hosts from."""
    r = abx(daemon, "env", "e2b")
    assert r.returncode == 0, r.stderr
    port = daemon.url.rsplit(":", 1)[1]
    assert r.stdout.splitlines() == [f"E2B_API_URL={daemon.url}", f"E2B_SANDBOX_URL={daemon.url}",
                                     f"E2B_VOLUME_API_URL={daemon.url}",
                                     f"E2B_API_KEY={daemon.api_key}",
                                     f"E2B_DOMAIN=localhost:{port}"]
    exported = abx(daemon, "env", "e2b", "--export").stdout.splitlines()
    assert all(line.startswith("export E2B_") for line in exported) and len(exported) == 5


def test_abx_keys_create_gives_a_key_sandbox_create_accepts(daemon, monkeypatch):
    """`abx keys create` → a new e2b_ key; Sandbox.create(api_key=...) works with it at once."""
    r = abx(daemon, "keys", "create", "--name", "compat")
    assert r.returncode == 0, r.stderr
    key = r.stdout.strip()
    assert key.startswith("e2b_") and len(key) == 44
    sb = Sandbox.create(api_key=key)
    try:
        assert sb.commands.run("echo ok").stdout == "ok\n"
    finally:
        sb.kill()
    listing = abx(daemon, "keys", "list").stdout
    rows = [line.split() for line in listing.splitlines()[1:]]
    assert "compat" in listing and key not in listing
    assert any(row[1:3] == ["default", "yes"] for row in rows), "the daemon's own admin key"


@pytest.mark.offline
def test_wrong_api_key_is_401(daemon):
    """The control plane refuses an unknown key with 401."""
    reply = httpx.get(f"{daemon.url}/v2/sandboxes", headers={"X-API-KEY": "e2b_" + "0" * 40})
    assert reply.status_code == 401
