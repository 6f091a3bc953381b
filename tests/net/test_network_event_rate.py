"""Issue 37: a sandbox opening connections as fast as it can through the egress proxy has at
most 20 `connection` events a second recorded after a burst of 200 (egress/event_rate.h);
the others are counted, and the next event recorded says how many as `heldBack`, so that
every connection is accounted for and the sandbox's older record stays."""
from __future__ import annotations

import time

import pytest
from helpers import wait_until
from netcheck import create, sh
from test_network_events import record
from world import WWW

pytestmark = pytest.mark.net

RATE, BURST = 20, 200
FLOOD = 1500

# Sequential HTTP/1.0 requests to the world's web server, each read to its close.
CONNECT = """python3 - <<'EOF'
import socket
for _ in range({count}):
    with socket.create_connection(("{address}", 80), timeout=5) as s:
        s.sendall(b"GET /status/204 HTTP/1.0\\r\\nHost: www.example.test\\r\\n\\r\\n")
        while s.recv(4096):
            pass
EOF"""


def connections(d, sandbox: str) -> list[dict]:
    _, events = record(d, sandbox, "--type", "network")
    return [e for e in events if e["event"] == "connection" and e["ip"] == WWW]


def test_a_connection_flood_is_recorded_at_the_rate_with_the_rest_counted(net_daemon):
    sandbox = create(net_daemon, network={"allowOut": ["www.example.test"]})
    started = time.monotonic()
    flood = sh(net_daemon, sandbox, CONNECT.format(count=FLOOD, address=WWW), timeout=240)
    elapsed = time.monotonic() - started
    assert flood.returncode == 0, flood.stderr
    recorded = connections(net_daemon, sandbox)
    # What went during the flood: the burst and the rate over (more than) its time.
    assert len(recorded) <= BURST + RATE * elapsed + 1, (len(recorded), elapsed)

    # Each connection is recorded or counted in one recorded after it: one more at a time
    # until the counts add up (the last of the flood may be recorded a moment after it).
    probes = 0

    def accounted() -> bool:
        nonlocal probes
        probes += 1
        assert sh(net_daemon, sandbox, CONNECT.format(count=1, address=WWW)).returncode == 0
        events = connections(net_daemon, sandbox)
        return sum(1 + e.get("heldBack", 0) for e in events) == FLOOD + probes

    wait_until(accounted, timeout=60, interval=0.2, what="every connection recorded or counted")
    events = connections(net_daemon, sandbox)
    assert all(e["allowed"] and e["host"] == "www.example.test" for e in events)
    if FLOOD > BURST + RATE * elapsed:
        assert any(e.get("heldBack", 0) > 0 for e in events), "nothing was held back"
    _, everything = record(net_daemon, sandbox)
    assert everything[0]["event"] == "created", "the flood pushed the lifecycle out"
