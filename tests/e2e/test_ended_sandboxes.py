"""GET /abx/v1/sandboxes/ended: a team's sandboxes that ended while their flight record is kept,
each with when it started and ended and why (killed by which key, by id and name, even once that
key is revoked; its timeout ran out), newest end first, to that team only, and still after a
daemon restart. Real daemon, plain HTTP."""
from __future__ import annotations

import json
import time
from datetime import datetime

import httpx
import pytest
from durable_helpers import restart

pytestmark = pytest.mark.offline


def _client(d, key: str) -> httpx.Client:
    return httpx.Client(base_url=d.url, headers={"X-API-KEY": key}, timeout=30)


def _create(api: httpx.Client, timeout: int = 300) -> str:
    r = api.post("/sandboxes", json={"templateID": "host", "timeout": timeout})
    assert r.status_code == 201, r.text
    return r.json()["sandboxID"]


def _ended(api: httpx.Client, **params) -> dict:
    r = api.get("/abx/v1/sandboxes/ended", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def _by_id(answer: dict) -> dict[str, dict]:
    return {s["sandboxID"]: s for s in answer["sandboxes"]}


def _wait_listed(api: httpx.Client, sandbox_id: str, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = _by_id(_ended(api)).get(sandbox_id)
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{sandbox_id} was not listed as ended within {seconds} s")


def test_ended_sandboxes_are_listed_with_why_and_who_to_their_team_only(own_daemon, monkeypatch):
    d = own_daemon["d"]
    with d.api() as admin:
        ops = admin.post("/abx/v1/keys", json={"team": "default", "name": "night-janitor"}).json()
        other_key = admin.post("/abx/v1/keys", json={"team": "other", "name": "else"}).json()["key"]
    with _client(d, ops["key"]) as api, _client(d, other_key) as other:
        assert _ended(api) == {"sandboxes": [], "truncated": False}
        killed = _create(api)
        running = _create(api)
        foreign = _create(other)
        assert api.delete(f"/sandboxes/{killed}").status_code == 204
        assert other.delete(f"/sandboxes/{foreign}").status_code == 204
        timed_out = _create(api, timeout=1)

        listed = _wait_listed(api, timed_out, 30)  # the TTL sweep ends it
        assert listed["why"] == "timeout reached: killed" and listed["key"] == ""
        answer = _ended(api)
        found = _by_id(answer)
        assert set(found) == {killed, timed_out}, answer  # not the running one, nor another team's
        assert [s["sandboxID"] for s in answer["sandboxes"]] == [timed_out, killed]  # newest end first
        one = found[killed]
        assert one["why"] == "killed" and one["key"] == ops["id"] and one["keyName"] == "night-janitor"
        assert one["templateID"] == "host" and one["cpuCount"] >= 1 and one["memoryMB"] >= 1
        started = datetime.fromisoformat(one["startedAt"])
        ended = datetime.fromisoformat(one["endedAt"])
        assert started <= ended
        assert answer["truncated"] is False

        # Its record says the same: the `ended` event names the key.
        last = json.loads(api.get(f"/abx/v1/sandboxes/{killed}/events").text.splitlines()[-1])
        assert (last["event"], last["key"], last["keyName"]) == ("ended", ops["id"], "night-janitor")

        # The other team sees only its own, and none of this team's records.
        assert set(_by_id(_ended(other))) == {foreign}
        assert other.get(f"/abx/v1/sandboxes/{killed}/events").status_code == 404

        short = _ended(api, limit=1)
        assert [s["sandboxID"] for s in short["sandboxes"]] == [timed_out] and short["truncated"]
        for bad in ("0", "1001", "ten"):
            r = api.get("/abx/v1/sandboxes/ended", params={"limit": bad})
            assert r.status_code == 400 and "limit" in r.json()["message"], r.text
        assert api.delete(f"/sandboxes/{running}").status_code == 204

    # The key revoked and the daemon killed and started again: the list is read from the
    # records, and still names the key.
    with d.api() as admin:
        assert admin.delete(f"/abx/v1/keys/{ops['id']}").status_code in (200, 204)
    d = own_daemon["d"] = restart(d, monkeypatch)
    with d.api() as api:
        found = _by_id(_ended(api))
    assert {killed, timed_out, running} <= set(found)
    assert found[killed]["keyName"] == "night-janitor" and found[killed]["why"] == "killed"


def test_a_sandbox_that_expired_while_the_daemon_was_down_is_listed_with_why(own_daemon,
                                                                             monkeypatch):
    d = own_daemon["d"]
    with d.api() as api:
        sandbox_id = _create(api, timeout=2)
    d.proc.kill()  # SIGKILL: no end is recorded now
    d.proc.wait()
    time.sleep(3)
    d = own_daemon["d"] = restart(d, monkeypatch)
    with d.api() as api:
        found = _by_id(_ended(api))[sandbox_id]
    assert found["why"] == "timeout reached while the daemon was down: killed", found
    assert found["templateID"] == "host"
