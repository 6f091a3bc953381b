"""Issue 37, the flight recorder's "Network": every egress decision the daemon makes is in the
sandbox's record as a `network` event: DNS names asked (allowed or denied), connections
(host, address, port, the rule that decided or why not, bytes each way), and the requests
through the intercepting proxy (method, host, path, the secrets put in by name, never by
value). A sandbox asking one name in a loop records it once per 10 s with a count."""
from __future__ import annotations

import json
import time

import pytest
from helpers import abx, wait_until
from netcheck import create, fetch, sh, world_saw
from test_header_rules import HOST, store_secret
from world import API, WWW

pytestmark = pytest.mark.net

EVERYTHING = "0.0.0.0/0"


def record(d, sandbox: str, *options: str) -> tuple[str, list[dict]]:
    """`abx events ID --json` as printed, and its events."""
    r = abx(d, "events", sandbox, "--json", *options)
    assert r.returncode == 0, r.stderr
    return r.stdout, [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def network(d, sandbox: str, name: str, **fields) -> list[dict]:
    """The sandbox's network events called `name` whose fields include `fields`."""
    _, events = record(d, sandbox)
    return [e for e in events if e["type"] == "network" and e["event"] == name
            and all(e.get(k) == v for k, v in fields.items())]


def one(d, sandbox: str, name: str, **fields) -> dict:
    """Waits for the event (a connection's comes when it closes) and returns it."""
    found = wait_until(lambda: network(d, sandbox, name, **fields), timeout=10,
                       what=f"a {name} event with {fields}")
    return found[0]


def test_allowed_denied_and_intercepted_traffic_is_in_the_record(net_world, net_daemon):
    secret_name, secret_value = store_secret(net_daemon)
    sandbox = create(net_daemon, network={
        "denyOut": [EVERYTHING], "allowOut": ["api.example.test", HOST],
        "rules": {HOST: [{"transform": {"headers": {
            "Authorization": f"Bearer abx-secret:{secret_name}"}}}]}})

    allowed = fetch(net_daemon, sandbox, "http://api.example.test/status/204")
    assert allowed.answered(204), str(allowed)
    unresolved = fetch(net_daemon, sandbox, "http://example.test/status/204")
    assert unresolved.exit_code != 0, str(unresolved)
    # The name resolved by hand: the proxy sees it in Host and refuses the connection.
    refused = fetch(net_daemon, sandbox, "http://example.test/status/204",
                    "--resolve", f"example.test:80:{WWW}")
    assert not refused.answered(204) and not world_saw(net_world, refused), str(refused)
    with_secret = fetch(net_daemon, sandbox, f"https://{HOST}/status/204")
    assert with_secret.answered(204), str(with_secret)
    assert world_saw(net_world, with_secret)[0]["headers"]["Authorization"] == f"Bearer {secret_value}"

    assert one(net_daemon, sandbox, "dns", host="api.example.test", allowed=True)["rule"] == \
        "allowOut api.example.test"
    assert one(net_daemon, sandbox, "dns", host="example.test", allowed=False)["reason"] == \
        f"denyOut {EVERYTHING}"

    api = one(net_daemon, sandbox, "connection", host="api.example.test")
    assert (api["allowed"], api["ip"], api["port"]) == (True, API, 80), api
    assert api["rule"] == "allowOut api.example.test", api
    assert api["bytesOut"] > 0 and api["bytesIn"] > 0, api
    denied = one(net_daemon, sandbox, "connection", host="example.test")
    assert (denied["allowed"], denied["ip"], denied["port"]) == (False, WWW, 80), denied
    assert f"denyOut {EVERYTHING}" in denied["reason"], denied
    assert "bytesOut" not in denied, denied

    intercepted = one(net_daemon, sandbox, "connection", host=HOST)
    assert (intercepted["allowed"], intercepted["port"]) == (True, 443), intercepted
    assert intercepted["rule"] == f"allowOut {HOST}; header rule {HOST}", intercepted
    request = one(net_daemon, sandbox, "request", host=HOST)
    assert (request["method"], request["path"], request["allowed"]) == \
        ("GET", "/status/204", True), request  # the query (it may hold tokens) is left out
    assert request["secrets"] == [secret_name], request
    assert [e["event"] for e in network(net_daemon, sandbox, "request")] == ["request"], \
        "only the intercepted host's requests are read"

    printed, events = record(net_daemon, sandbox)
    assert secret_value not in printed, "the record holds the secret's value"
    table = abx(net_daemon, "events", sandbox)
    assert table.returncode == 0 and secret_value not in table.stdout, table.stdout
    assert f"secrets=[\"{secret_name}\"]" in table.stdout, table.stdout
    # Ordered with the sandbox's other events, and --type network gives only these.
    assert events[0]["type"] == "lifecycle" and events[0]["event"] == "created", events[0]
    _, only = record(net_daemon, sandbox, "--type", "network")
    assert only and {e["type"] for e in only} == {"network"}
    assert len(only) == sum(e["type"] == "network" for e in events)


def test_a_name_asked_in_a_loop_is_recorded_once_per_window_with_a_count(net_daemon):
    sandbox = create(net_daemon, network={"allowOut": ["api.example.test"]})
    asked = sh(net_daemon, sandbox,
               "for i in $(seq 40); do getent ahostsv4 api.example.test >/dev/null || exit 1; done")
    assert asked.returncode == 0, asked.stderr
    first = network(net_daemon, sandbox, "dns", host="api.example.test")
    assert len(first) == 1 and "repeats" not in first[0], first
    # The window (10 s) over, the next query is recorded with the ones held back.
    time.sleep(10.5)
    again = sh(net_daemon, sandbox, "getent ahostsv4 api.example.test >/dev/null")
    assert again.returncode == 0, again.stderr
    events = network(net_daemon, sandbox, "dns", host="api.example.test")
    assert len(events) == 2 and events[1]["repeats"] >= 39, events
    _, everything = record(net_daemon, sandbox)
    assert any(e["event"] == "created" for e in everything), "the lifecycle was pushed out"
