"""A team's quota reaches the SDK user as RateLimitError carrying the daemon's message."""
from __future__ import annotations

import pytest
from agent_sandbox import RateLimitError, Sandbox

pytestmark = pytest.mark.offline  # the `host` template needs no build

TEAM = "sdk-quota"


@pytest.fixture
def team_key(daemon):
    with daemon.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": TEAM, "name": "sdk quota test"})
        assert made.status_code == 201, made.text
        quota = admin.put(f"/abx/v1/teams/{TEAM}/quota", json={"maxSandboxes": 1})
        assert quota.status_code == 200, quota.text
        yield made.json()["key"]
        admin.put(f"/abx/v1/teams/{TEAM}/quota", json={"maxSandboxes": 0})
        assert admin.delete(f"/abx/v1/keys/{made.json()['id']}").status_code in (200, 204)


async def test_quota_refusal_raises_rate_limit_error_naming_the_limit(daemon, team_key):
    conn = {"api_url": daemon.url, "api_key": team_key}
    async with await Sandbox.create(template="host", **conn):
        with pytest.raises(RateLimitError) as refused:
            await Sandbox.create(template="host", **conn)
        message = str(refused.value)
        assert "limit 1" in message and f"abx quota set --team {TEAM} --sandboxes" in message
        assert "\n" not in message
        assert len(await Sandbox.list(**conn)) == 1, "the refused create left a sandbox"
    # The quota counts live sandboxes: once the first is gone, a create fits again.
    async with await Sandbox.create(template="host", **conn) as again:
        assert await again.is_running()
