"""Issue 13, E2B's egress policy: denyOut and allowOut with IPs, CIDRs, domains and
*.wildcards; allow wins over deny; domains are matched on the HTTP Host or TLS SNI, other
TCP ports by address only."""
from __future__ import annotations

import pytest
from netcheck import assert_blocked, assert_reached, create, fetch_all, tcp_echo, upload_world_ca
from world import API, WWW

pytestmark = pytest.mark.net

EVERYTHING = "0.0.0.0/0"


def test_deny_one_address(net_world, net_daemon):
    sandbox = create(net_daemon, network={"denyOut": [WWW]})
    denied, by_name, allowed = fetch_all(net_daemon, sandbox, f"http://{WWW}/",
                                         "http://www.example.test/", f"http://{API}/")
    assert_reached(net_world, allowed)
    assert_blocked(net_world, denied)
    assert_blocked(net_world, by_name)
    assert tcp_echo(net_daemon, sandbox, WWW) != "ping"


@pytest.mark.parametrize("allowed", [API, "203.0.113.0/24"], ids=["address", "cidr"])
def test_allow_addresses_over_deny_everything(net_world, net_daemon, allowed):
    sandbox = create(net_daemon, network={"denyOut": [EVERYTHING], "allowOut": [allowed]})
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    api, api_tls, www, other = fetch_all(
        net_daemon, sandbox, f"http://{API}/", (f"https://{API}/", "--cacert", ca),
        f"http://{WWW}/", "http://1.1.1.1/headers")
    assert_reached(net_world, api)
    assert_reached(net_world, api_tls)
    assert_blocked(net_world, other)
    if allowed == API:
        assert_blocked(net_world, www)
    else:  # the whole /24
        assert_reached(net_world, www)
        assert tcp_echo(net_daemon, sandbox, WWW) == "ping"


def test_long_overlapping_lists(net_world, net_daemon):
    # Past 16 entries a list is matched as one set (not a rule per entry): overlapping
    # entries and a duplicate must still be taken, and the order of precedence kept.
    filler = [f"192.0.2.{i}" for i in range(20)] + ["198.51.100.0/24", "198.51.100.128/25"]
    sandbox = create(net_daemon, network={
        "denyOut": [EVERYTHING, *filler, f"{WWW}/32"],
        "allowOut": [*filler, API, f"{API}/32", "203.0.113.0/30"]})
    api, www = fetch_all(net_daemon, sandbox, f"http://{API}/", f"http://{WWW}/")
    assert_reached(net_world, api)
    assert_blocked(net_world, www)


def test_allow_a_domain_over_deny_everything(net_world, net_daemon):
    sandbox = create(net_daemon, network={"denyOut": [EVERYTHING], "allowOut": ["api.example.test"]})
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    api, api_tls, www, www_tls, by_address = fetch_all(
        net_daemon, sandbox, "http://api.example.test/headers",
        ("https://api.example.test/headers", "--cacert", ca), "http://www.example.test/",
        ("https://www.example.test/", "--cacert", ca), f"http://{WWW}/")
    assert assert_reached(net_world, api)["headers"]["Host"] == "api.example.test"
    # Not intercepted (no rules for it): the world's own certificate reached the sandbox.
    assert assert_reached(net_world, api_tls)["scheme"] == "https"
    for f in (www, www_tls, by_address):
        assert_blocked(net_world, f)
    # A port that is not HTTP(S) is matched by address only: the name's address is not allowed.
    assert tcp_echo(net_daemon, sandbox, API) != "ping"


def test_an_allowed_name_does_not_open_another_address(net_world, net_daemon):
    """The Host header and SNI are the sandbox's word: an allowed name sent to an address
    that name does not have is refused, or every address would pass as that name."""
    sandbox = create(net_daemon, network={"denyOut": [EVERYTHING], "allowOut": ["api.example.test"]})
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    elsewhere = f"api.example.test:80:{WWW}"
    elsewhere_tls = f"api.example.test:443:{WWW}"
    plain, tls, control = fetch_all(
        net_daemon, sandbox, ("http://api.example.test/fronted", "--resolve", elsewhere),
        ("https://api.example.test/fronted", "--cacert", ca, "--resolve", elsewhere_tls),
        "http://api.example.test/real")
    assert_blocked(net_world, plain)
    assert_blocked(net_world, tls)
    assert_reached(net_world, control)


def test_allow_a_wildcard_domain_over_deny_everything(net_world, net_daemon):
    sandbox = create(net_daemon, network={"denyOut": [EVERYTHING], "allowOut": ["*.example.test"]})
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    www, api_tls, wild, other = fetch_all(
        net_daemon, sandbox, "http://www.example.test/", ("https://api.example.test/", "--cacert", ca),
        ("https://x.wild.example.test/", "--cacert", ca), "http://1.1.1.1/headers")
    for f in (www, api_tls, wild):
        assert_reached(net_world, f)
    assert_blocked(net_world, other)


def test_deny_a_domain(net_world, net_daemon):
    sandbox = create(net_daemon, network={"denyOut": ["www.example.test"]})
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    www, www_tls, api = fetch_all(net_daemon, sandbox, "http://www.example.test/",
                                  ("https://www.example.test/", "--cacert", ca),
                                  "http://api.example.test/")
    assert_blocked(net_world, www)
    assert_blocked(net_world, www_tls)
    assert_reached(net_world, api)
