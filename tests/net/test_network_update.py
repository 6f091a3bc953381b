"""Issue 13, update_network (E2B's PUT /sandboxes/{id}/network): the new policy replaces the
old one whole on a live sandbox, and connections it forbids are cut."""
from __future__ import annotations

import queue
import subprocess
import threading

import pytest
from harness import ABX_BIN
from netcheck import assert_blocked, assert_reached, create, fetch_all, update_network
from world import API, WWW

pytestmark = pytest.mark.net

EVERYTHING = "0.0.0.0/0"


def lines_of(proc: subprocess.Popen) -> queue.Queue:
    """The process's stdout, a line at a time, read by a thread (None at the end)."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_update_cuts_a_live_connection_it_forbids(net_world, net_daemon):
    sandbox = create(net_daemon)
    # A stream that would run 60 s; a stall of 3 s counts as cut as well as a reset does.
    stream = subprocess.Popen(
        [str(ABX_BIN), "exec", sandbox, "--", "curl", "-sS", "-N", "--speed-limit", "1",
         "--speed-time", "3", f"http://{WWW}/stream"],
        env=net_daemon.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        lines = lines_of(stream)
        first = lines.get(timeout=15)
        if first is None:  # curl ended: what it said is all there is
            pytest.fail(f"the stream did not start: {stream.wait()} {stream.stderr.read()}")
        assert first == "tick 0\n", f"the stream did not start: {first!r}"
        update_network(net_daemon, sandbox, {"denyOut": [WWW]})
        assert stream.wait(timeout=15) != 0, "curl finished the stream as if nothing happened"
        ticks = 0
        while lines.get(timeout=5) is not None:
            ticks += 1
        assert ticks < 60 / 0.2 - 1, "the whole stream arrived"
    finally:
        if stream.poll() is None:
            stream.kill()
            stream.wait()
    denied, allowed = fetch_all(net_daemon, sandbox, f"http://{WWW}/after", f"http://{API}/after")
    assert_blocked(net_world, denied)
    assert_reached(net_world, allowed)


def test_an_update_replaces_the_whole_policy(net_world, net_daemon):
    sandbox = create(net_daemon, network={"denyOut": [EVERYTHING], "allowOut": [API]})
    www, api = fetch_all(net_daemon, sandbox, f"http://{WWW}/before", f"http://{API}/before")
    assert_blocked(net_world, www)
    assert_reached(net_world, api)
    update_network(net_daemon, sandbox, {})  # E2B: omitted fields are cleared
    for f in fetch_all(net_daemon, sandbox, f"http://{WWW}/cleared", f"http://{API}/cleared"):
        assert_reached(net_world, f)
    update_network(net_daemon, sandbox, {"denyOut": [API]})
    www, api = fetch_all(net_daemon, sandbox, f"http://{WWW}/denied", f"http://{API}/denied")
    assert_reached(net_world, www)
    assert_blocked(net_world, api)


def test_an_update_can_take_the_internet_away_and_give_it_back(net_world, net_daemon):
    sandbox = create(net_daemon)
    update_network(net_daemon, sandbox, {"allow_internet_access": False})
    (f,) = fetch_all(net_daemon, sandbox, f"http://{WWW}/off")
    assert_blocked(net_world, f)
    update_network(net_daemon, sandbox, {"allow_internet_access": True})
    (f,) = fetch_all(net_daemon, sandbox, f"http://{WWW}/on")
    assert_reached(net_world, f)


def test_an_update_of_an_unknown_sandbox_is_404(net_daemon):
    with net_daemon.api() as api:
        r = api.put("/sandboxes/nosuchsandbox/network", json={"denyOut": [WWW]})
    assert r.status_code == 404, r.text


def test_concurrent_updates_never_leave_another_policy_enforced_than_stored(net_world, net_daemon):
    """Updates race from many callers: each is applied whole or refused with 409, and the
    policy the sandbox shows afterwards is the one it enforces."""
    from concurrent.futures import ThreadPoolExecutor

    sandbox = create(net_daemon)
    bodies = [{"denyOut": [WWW]} if i % 2 else {"denyOut": [API]} for i in range(16)]

    def put(body):
        with net_daemon.api() as api:
            return api.put(f"/sandboxes/{sandbox}/network", json=body)

    with ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(put, bodies))
    assert {r.status_code for r in replies} <= {204, 409}, [r.text for r in replies]
    assert any(r.status_code == 204 for r in replies)
    assert all("another network update" in r.json()["message"]
               for r in replies if r.status_code == 409)
    with net_daemon.api() as api:
        (denied,) = api.get(f"/sandboxes/{sandbox}").json()["network"]["denyOut"]
    allowed = API if denied == WWW else WWW
    blocked, reached = fetch_all(net_daemon, sandbox, f"http://{denied}/race-denied",
                                 f"http://{allowed}/race-allowed")
    assert_blocked(net_world, blocked)
    assert_reached(net_world, reached)
