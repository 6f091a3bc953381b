"""The flight recorder, part 1: `GET /abx/v1/sandboxes/{id}/events` tells what happened in a
sandbox (its lifecycle, the commands run with their argv, env names and exit codes), in order,
to its team only, also after a daemon SIGKILL and after the sandbox ended. Real daemon, E2B
SDK for the commands."""
from __future__ import annotations

import json

import pytest
from durable_helpers import restart

pytestmark = pytest.mark.offline
e2b = pytest.importorskip("e2b", reason="the E2B SDK is installed by make deps")


def events(d, sandbox_id: str, key: str | None = None, **query) -> list[dict]:
    with d.api() as api:
        headers = {"X-API-KEY": key} if key else {}
        r = api.get(f"/abx/v1/sandboxes/{sandbox_id}/events", params=query, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines()]


def named(found: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["event"]) for e in found]


def test_what_happened_in_a_sandbox_is_recorded_in_order(own_daemon, monkeypatch):
    d = own_daemon["d"]
    sb = e2b.Sandbox.create(template="host", timeout=300)
    sid = sb.sandbox_id
    ok = sb.commands.run("echo hi", envs={"SECRET_TOKEN": "do-not-record"}, cwd="/tmp")
    assert ok.exit_code == 0
    with pytest.raises(Exception):
        sb.commands.run("exit 3")
    sb.set_timeout(200)

    found = events(d, sid)
    assert named(found) == [("lifecycle", "created"), ("commands", "started"),
                            ("commands", "ended"), ("commands", "started"),
                            ("commands", "ended"), ("lifecycle", "timeout set")]
    assert [e["seq"] for e in found] == sorted(e["seq"] for e in found)
    created = found[0]
    assert created["template"] == "host" and created["key"], created
    started = found[1]
    assert started["argv"][-1] == "echo hi" and started["cwd"] == "/tmp"
    assert "SECRET_TOKEN" in started["envNames"]
    assert "do-not-record" not in json.dumps(found), "env values are never recorded"
    assert found[2]["exitCode"] == 0 and found[4]["exitCode"] == 3
    assert named(events(d, sid, type="lifecycle")) == [("lifecycle", "created"),
                                                        ("lifecycle", "timeout set")]
    assert events(d, sid, since=found[-2]["seq"]) == [found[-1]]

    # Another team sees nothing, as for an unknown sandbox.
    with d.api() as api:
        other = api.post("/abx/v1/keys", json={"team": "other"}).json()["key"]
        foreign = api.get(f"/abx/v1/sandboxes/{sid}/events", headers={"X-API-KEY": other})
        unknown = api.get("/abx/v1/sandboxes/nosuchsandbox/events")
    assert foreign.status_code == unknown.status_code == 404

    # A daemon SIGKILL loses nothing; the record goes on after it, and outlives the sandbox.
    d = own_daemon["d"] = restart(d, monkeypatch)
    sb = e2b.Sandbox.connect(sid)
    sb.commands.run("true")
    sb.kill()
    after = events(d, sid)
    assert after[:len(found)] == found
    assert named(after[len(found):]) == [("lifecycle", "adopted"),
                                         ("lifecycle", "timeout set"),  # connect() sets one
                                         ("commands", "started"), ("commands", "ended"),
                                         ("lifecycle", "ended")]
    assert after[-1]["why"] == "killed" and after[-1]["key"] == created["key"]
    with d.api() as api:
        assert api.get(f"/abx/v1/sandboxes/{sid}/events",
                       params={"type": "packets"}).status_code == 400


def test_abx_events_prints_the_record_and_its_json_lines(own_daemon):
    from helpers import abx
    d = own_daemon["d"]
    made = abx(d, "create", "host")
    assert made.returncode == 0, made.stderr
    sid = made.stdout.strip()
    assert abx(d, "exec", sid, "--", "true").returncode == 0
    table = abx(d, "events", sid)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0].split() == ["SEQ", "TIME", "TYPE", "EVENT", "DETAILS"]
    assert any(" lifecycle " in row and " created " in row for row in rows[1:])
    assert any(" commands " in row and " started " in row and "argv=" in row for row in rows[1:])
    lines = abx(d, "events", sid, "--json", "--type", "commands").stdout.splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["started", "ended"]
    abx(d, "kill", sid, "--yes")
    missing = abx(d, "events", "nosuchsandbox")
    assert missing.returncode == 1 and "no events of sandbox nosuchsandbox" in missing.stderr
