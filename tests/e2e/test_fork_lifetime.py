"""A fork asked for without a timeout lives as long as a create's default (300 s), not 15 s:
forks are sandboxes to work in. Real daemon, E2B's create and our fork route."""
from __future__ import annotations

from datetime import datetime

import pytest

pytestmark = pytest.mark.offline


def lifetime_s(sandbox: dict) -> float:
    parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))  # noqa: E731
    return (parse(sandbox["endAt"]) - parse(sandbox["startedAt"])).total_seconds()


def test_a_fork_lives_as_long_as_a_default_create(own_daemon):
    d = own_daemon["d"]
    with d.api() as api:
        source = api.post("/sandboxes", json={"templateID": "host"})
        assert source.status_code == 201, source.text
        source_id = source.json()["sandboxID"]
        forked = api.post(f"/sandboxes/{source_id}/fork", json={})
        assert forked.status_code == 201, forked.text
        child_id = forked.json()[0]["sandbox"]["sandboxID"]
        try:
            child = api.get(f"/sandboxes/{child_id}").json()
            parent = api.get(f"/sandboxes/{source_id}").json()
            assert 290 <= lifetime_s(child) <= 300, child
            assert abs(lifetime_s(child) - lifetime_s(parent)) < 10
        finally:
            for sandbox_id in (child_id, source_id):
                api.delete(f"/sandboxes/{sandbox_id}")
