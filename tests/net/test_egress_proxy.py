"""Issue 13, "bring your own proxy": network.egressProxy tunnels the sandbox's outbound TCP
through a SOCKS5 server (the world's microsocks, with and without a password), so the
destination sees the proxy's address; and a proxy that is not there, refuses the password
or goes away fails closed: nothing leaves directly."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from helpers import wait_until
from netcheck import assert_blocked, assert_reached, create, fetch_all, tcp_echo, upload_world_ca
from world import SOCKS, SOCKS_PASSWORD, SOCKS_USER, WWW, World, stop_process

pytestmark = pytest.mark.net

OWN_PORT = 1090  # the test's own SOCKS server, which it stops


def proxied(address: str, **auth: str) -> dict:
    return {"network": {"egressProxy": {"address": address, **auth}}}


@pytest.mark.parametrize("body", [
    proxied(f"{SOCKS}:1080"),
    proxied(f"{SOCKS}:1081", username=SOCKS_USER, password=SOCKS_PASSWORD),
], ids=["open", "password"])
def test_fetches_go_through_the_socks_server(net_world, net_daemon, body):
    sandbox = create(net_daemon, **body)
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    for f in fetch_all(net_daemon, sandbox, "http://www.example.test/via",
                       ("https://www.example.test/via", "--cacert", ca), f"http://{WWW}/via"):
        assert assert_reached(net_world, f)["client"] == SOCKS, str(f)
    assert tcp_echo(net_daemon, sandbox, WWW) == "ping"  # any TCP, not only HTTP


@pytest.mark.parametrize("body", [
    proxied(f"{SOCKS}:1089"),  # nothing listens there
    proxied(f"{SOCKS}:1081", username=SOCKS_USER, password="wrong"),
    proxied(f"{SOCKS}:1081"),  # the server wants a password
], ids=["nothing-there", "wrong-password", "no-password"])
def test_an_unusable_proxy_fails_closed(net_world, net_daemon, body):
    sandbox = create(net_daemon, **body)
    for f in fetch_all(net_daemon, sandbox, "http://www.example.test/closed", f"http://{WWW}/closed"):
        assert_blocked(net_world, f)
    assert tcp_echo(net_daemon, sandbox, WWW) != "ping"


@pytest.fixture
def own_socks(net_world: World) -> Iterator[subprocess.Popen]:
    server = subprocess.Popen(
        ["ip", "netns", "exec", net_world.internet_ns, "microsocks", "-i", SOCKS, "-p",
         str(OWN_PORT), "-b", SOCKS],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        wait_until(lambda: f"{SOCKS}:{OWN_PORT}" in net_world.run_in(
            net_world.internet_ns, "ss", "-Hltn").stdout, what="the test's SOCKS server")
        yield server
    finally:
        stop_process(server)


def test_a_proxy_that_goes_away_fails_closed(net_world, net_daemon, own_socks):
    sandbox = create(net_daemon, **proxied(f"{SOCKS}:{OWN_PORT}"))
    (before,) = fetch_all(net_daemon, sandbox, f"http://{WWW}/before")
    assert assert_reached(net_world, before)["client"] == SOCKS
    stop_process(own_socks)
    for f in fetch_all(net_daemon, sandbox, f"http://{WWW}/after", "http://www.example.test/after"):
        assert_blocked(net_world, f)
