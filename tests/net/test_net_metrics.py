"""Issue 19's network chart reads what the daemon samples: a sandbox's metrics carry the
bytes it received and sent (netRxBytes, netTxBytes, running totals from its veth), so a
download and an upload in the test world show up in them."""
from __future__ import annotations

import pytest
from helpers import wait_until
from netcheck import create, sh
from world import WWW

pytestmark = pytest.mark.net

MIB = 1 << 20


def latest(d, sandbox_id: str) -> dict:
    with d.api() as api:
        r = api.get(f"/sandboxes/{sandbox_id}/metrics")
    assert r.status_code == 200, r.text
    return r.json()[-1]


def test_metrics_count_the_bytes_a_sandbox_receives_and_sends(net_world, net_daemon):
    sandbox = create(net_daemon)
    before = latest(net_daemon, sandbox)
    r = sh(net_daemon, sandbox, f"curl -sS --max-time 20 -o /dev/null http://{WWW}/bytes?mib=4 &&"
                                f" head -c {2 * MIB} /dev/zero > /tmp/up && curl -sS --max-time 20"
                                f" -T /tmp/up http://{WWW}/sink")
    assert r.returncode == 0 and '"received"' in r.stdout, r.stdout + r.stderr
    after = wait_until(lambda: (lambda s: s if s["netRxBytes"] - before["netRxBytes"] >= 4 * MIB
                                and s["netTxBytes"] - before["netTxBytes"] >= 2 * MIB else None)(
        latest(net_daemon, sandbox)), timeout=15, what="the transfer in the metrics")
    # Headers and TCP overhead on top, but nothing like ten times the data.
    assert after["netRxBytes"] - before["netRxBytes"] < 40 * MIB
    assert after["netTxBytes"] - before["netTxBytes"] < 20 * MIB
    # Our SDK reads them too.
    from agent_sandbox.sync import Sandbox
    sdk = Sandbox.connect(sandbox, api_url=net_daemon.url, api_key=net_daemon.api_key)
    sample = sdk.get_metrics()[-1]
    assert sample.net_rx_bytes >= after["netRxBytes"] and sample.net_tx_bytes >= 2 * MIB
    sdk.close()

