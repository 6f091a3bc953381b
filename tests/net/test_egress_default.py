"""Issue 13, "internet on by default": a sandbox resolves and fetches from the (test world's)
internet over HTTP and TLS, NAT-ed through the daemon's address, and allow_internet_access
false takes all of it away."""
from __future__ import annotations

import pytest
from netcheck import assert_blocked, assert_reached, create, fetch_all, tcp_echo, upload_world_ca
from world import API, DAEMON_ADDR, WWW

pytestmark = pytest.mark.net


def test_internet_is_on_by_default_over_http_and_tls(net_world, net_daemon):
    sandbox = create(net_daemon)
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    by_name, tls, by_address = fetch_all(
        net_daemon, sandbox, "http://www.example.test/headers",
        ("https://www.example.test/tls", "--cacert", ca), f"http://{API}/by-address")
    seen = assert_reached(net_world, by_name)
    assert seen["headers"]["Host"] == "www.example.test"
    assert by_name.json()["headers"]["Host"] == "www.example.test"
    seen = assert_reached(net_world, tls)
    assert (seen["scheme"], seen["server"]) == ("https", f"{WWW}:443")
    seen = assert_reached(net_world, by_address)
    # The world routes back to the daemon's address only: sandboxes leave NAT-ed.
    assert seen["client"] == DAEMON_ADDR
    assert tcp_echo(net_daemon, sandbox, WWW) == "ping"


def test_no_internet_access_blocks_http_tls_and_other_tcp(net_world, net_daemon):
    offline = create(net_daemon, allow_internet_access=False)
    online = create(net_daemon)  # the control: the world answers a sandbox of the same daemon
    ca = upload_world_ca(net_daemon, net_world, offline)
    for f in fetch_all(net_daemon, offline, "http://www.example.test/headers",
                       ("https://www.example.test/tls", "--cacert", ca), f"http://{WWW}/by-address",
                       ("https://203.0.113.10/tls-by-address", "--cacert", ca)):
        assert_blocked(net_world, f)
    assert tcp_echo(net_daemon, offline, WWW) != "ping"
    (control,) = fetch_all(net_daemon, online, "http://www.example.test/headers")
    assert_reached(net_world, control)
