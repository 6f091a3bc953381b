"""Issue 36 (major 5): header rules and secrets from the CLI, `--header HOST:NAME=VALUE` on
create, run and network update (a VALUE with abx-secret:NAME is that stored secret), checked
in what the daemon reports for the sandbox, never by sending a packet."""
from __future__ import annotations

import json

from helpers import abx

API = "api.example.test"


def network_of(daemon, sandbox_id: str) -> dict:
    r = abx(daemon, "network", "show", sandbox_id)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["network"]


def headers_of(network: dict, host: str) -> dict:
    (rule,) = network["rules"][host]
    return rule["transform"]["headers"]


def test_header_rules_from_create_and_network_update(daemon):
    made = abx(daemon, "create", "--template", "base", "--allow-out", API,
               "--header", f"{API}:Authorization=Bearer abx-secret:CLI_TOKEN",
               "--header", f"{API}:X-Team=blue-literal", "--header", "*.other.test:X-Key=k1")
    assert made.returncode == 0, made.stderr
    sandbox_id = made.stdout.strip()
    try:
        network = network_of(daemon, sandbox_id)
        assert network["allowOut"] == [API], network
        # A secret shows as its reference, a literal value never.
        assert headers_of(network, API) == {"Authorization": "abx-secret:CLI_TOKEN",
                                            "X-Team": "[hidden]"}, network
        assert "blue-literal" not in json.dumps(network)
        assert list(headers_of(network, "*.other.test")) == ["X-Key"]
        info = abx(daemon, "info", sandbox_id)
        assert "rules" in info.stdout, info.stdout

        # An update replaces the settings whole.
        updated = abx(daemon, "network", "update", sandbox_id, "--header", "new.example.test:X-A=1")
        assert updated.returncode == 0, updated.stderr
        network = network_of(daemon, sandbox_id)
        assert list(network["rules"]) == ["new.example.test"] and "allowOut" not in network
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")


def test_a_malformed_header_rule_is_a_usage_error_that_shows_the_shape(daemon):
    for bad in ("no-colon", "host:no-equals", ":X=1", "host:=v"):
        r = abx(daemon, "create", "--template", "base", "--header", bad)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert "HOST:NAME=VALUE" in r.stderr, r.stderr
    r = abx(daemon, "run", "base", "--header", f"{API}:X-Team=1", "--", "true")
    assert r.returncode == 0, r.stderr
