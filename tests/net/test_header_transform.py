"""Issue 13, "secrets never enter the sandbox": network.rules transforms set headers on the
way out, over HTTP and over HTTPS (the daemon terminates TLS with its own CA, which the
sandbox trusts from create, and verifies the real server against the world's CA); only
hosts with rules are intercepted; a header whose value names a daemon secret carries the
secret to the server and nowhere else."""
from __future__ import annotations

import secrets

import pytest
from helpers import abx
from netcheck import assert_reached, create, fetch, fetch_all, sh, upload_world_ca, world_saw

pytestmark = pytest.mark.net

RULES = {"www.example.test": [{"transform": {"headers": {"X-Injected": "v1"}}}]}

PYTHON_FETCH = """python3 - <<'EOF'
import json, urllib.request
with urllib.request.urlopen("https://www.example.test/headers?from=python", timeout=6) as r:
    print(json.load(r)["headers"].get("X-Injected"))
EOF"""


@pytest.mark.parametrize("network", [
    {"rules": RULES},
    {"rules": RULES, "denyOut": ["0.0.0.0/0"], "allowOut": ["www.example.test"]},
], ids=["rules", "rules-with-allowOut"])
def test_headers_are_set_on_http_and_https(net_world, net_daemon, network):
    sandbox = create(net_daemon, network=network)
    plain, tls, replaced = fetch_all(
        net_daemon, sandbox, "http://www.example.test/headers",
        "https://www.example.test/headers",  # no --cacert: the sandbox trusts the daemon's CA
        ("https://www.example.test/headers", "-H", "X-Injected: the sandbox's own"))
    for f in (plain, tls, replaced):
        assert assert_reached(net_world, f)["headers"].get("X-Injected") == "v1", str(f)
    # SSL_CERT_FILE and the like: tools other than curl trust the daemon's CA too.
    assert sh(net_daemon, sandbox, PYTHON_FETCH).stdout.strip() == "v1"


def test_only_hosts_with_rules_are_intercepted(net_world, net_daemon):
    sandbox = create(net_daemon, network={"rules": RULES})
    ca = upload_world_ca(net_daemon, net_world, sandbox)
    # Trusting the world's CA alone: api's certificate must be the world server's own.
    api, www_world_ca_only = fetch_all(
        net_daemon, sandbox, ("https://api.example.test/headers", "--cacert", ca),
        ("https://www.example.test/headers", "--cacert", ca))
    assert "X-Injected" not in assert_reached(net_world, api)["headers"]
    assert www_world_ca_only.exit_code == 60, f"www was not intercepted: {www_world_ca_only}"
    plain = fetch(net_daemon, sandbox, "http://api.example.test/headers")
    assert "X-Injected" not in assert_reached(net_world, plain)["headers"]


def test_a_secret_header_reaches_the_server_and_never_the_sandbox(net_world, net_daemon):
    value = f"s3cret-{secrets.token_hex(12)}"
    name = f"world_token_{secrets.token_hex(3)}"
    stored = abx(net_daemon, "secrets", "set", name, "--host", "www.example.test", input=value)
    assert stored.returncode == 0, stored.stderr
    reference = f"abx-secret:{name}"
    sandbox = create(net_daemon, network={"rules": {"www.example.test": [
        {"transform": {"headers": {"Authorization": reference}}}]}})
    # /status/204: the server answers nothing, so nothing echoes the header back.
    for url in ("http://www.example.test/status/204", "https://www.example.test/status/204"):
        f = fetch(net_daemon, sandbox, url, "-v")
        assert f.answered(204), str(f)
        (seen,) = world_saw(net_world, f)
        assert seen["headers"].get("Authorization") == value
        assert value not in f.stderr + f.body, "the sandbox's curl -v shows the secret"
    inside = sh(net_daemon, sandbox, "env; cat /proc/self/environ; cat /proc/1/environ 2>/dev/null; "
                "ls -la /etc/ssl/certs >/dev/null", timeout=30)
    assert value not in inside.stdout + inside.stderr
    with net_daemon.api() as api:
        for path in (f"/sandboxes/{sandbox}", "/v2/sandboxes"):
            assert value not in api.get(path).text, path
    assert value not in (net_daemon.data_dir / "daemon.log").read_text(errors="replace")
    listed = abx(net_daemon, "secrets", "list")
    assert value not in listed.stdout + listed.stderr
    assert [name, "www.example.test", "Authorization"] in [
        line.split() for line in listed.stdout.splitlines()]


def test_a_secret_goes_only_to_the_hosts_it_was_stored_for(net_world, net_daemon):
    """Anyone with a team key can write a rule naming any host: the secret still goes only
    where its owner said (here: www), never to the rule's api.example.test."""
    value = f"s3cret-{secrets.token_hex(12)}"
    name = f"bound_{secrets.token_hex(3)}"
    assert abx(net_daemon, "secrets", "set", name, "--host", "www.example.test",
               input=value).returncode == 0
    sandbox = create(net_daemon, network={"rules": {"api.example.test": [
        {"transform": {"headers": {"Authorization": f"abx-secret:{name}"}}}]}})
    for url in ("http://api.example.test/headers", "https://api.example.test/headers"):
        f = fetch(net_daemon, sandbox, url)
        assert f.status == 502 or f.exit_code != 0, str(f)
        assert not world_saw(net_world, f), f"{url} reached the world with the rule's request"
    unbound = abx(net_daemon, "secrets", "set", name, input=value)
    assert unbound.returncode != 0 and "--host" in unbound.stderr
