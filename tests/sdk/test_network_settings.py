"""Issue 36: network settings (secrets and headers among them) from the SDK in E2B's shape:
`create(network=...)` and `update_network(...)`, async and blocking, checked in what the daemon
reports for the sandbox (its info), never by sending a packet."""
from __future__ import annotations

import secrets

import pytest
from agent_sandbox import (
    ALL_TRAFFIC,
    AsyncSandbox,
    InvalidArgumentException,
    SandboxInfo,
)
from agent_sandbox import sync as agent_sync

API = "api.example.test"
OTHER = "other.example.test"


def header_rule(headers: dict) -> list:
    return [{"transform": {"headers": headers}}]


def rule_headers(info: SandboxInfo, host: str) -> dict:
    assert info.network is not None, "the info has no network settings"
    (rule,) = info.network["rules"][host]
    return rule["transform"]["headers"]


def check_created(info: SandboxInfo, literal: str) -> None:
    network = info.network
    assert network is not None
    assert network["allow_out"] == [API], network
    assert network["deny_out"] == [ALL_TRAFFIC], network  # from the callable
    assert network["dns_servers"] == ["1.1.1.1"], network
    headers = rule_headers(info, API)
    # The secret shows as its reference, a literal value not at all.
    assert headers == {"Authorization": "abx-secret:SDK_TOKEN", "X-Team": "[hidden]"}, headers
    assert literal not in repr(info)
    assert info.allow_internet_access is True


def created_settings(literal: str) -> dict:
    return {"allow_out": [API],
            "deny_out": lambda ctx: [ctx.all_traffic],
            "rules": {API: header_rule({"Authorization": "Bearer abx-secret:SDK_TOKEN",
                                        "X-Team": literal})},
            "dns_servers": ["1.1.1.1"]}


async def test_async_create_and_update_network(conn):
    literal = f"lit-{secrets.token_hex(8)}"
    async with await AsyncSandbox.create(network=created_settings(literal), **conn) as sandbox:
        check_created(await sandbox.get_info(), literal)
        # The update replaces the egress settings whole: deny_out and dns_servers are gone.
        await sandbox.update_network(
            {"allow_out": [OTHER], "rules": {OTHER: header_rule({"X-Key": "abx-secret:OTHER"})}})
        info = await sandbox.get_info()
        assert info.network is not None
        assert info.network["allow_out"] == [OTHER], info.network
        assert "deny_out" not in info.network and "dns_servers" not in info.network, info.network
        assert list(info.network["rules"]) == [OTHER], info.network
        assert rule_headers(info, OTHER) == {"X-Key": "abx-secret:OTHER"}
        await sandbox.update_network({"allow_internet_access": False})
        info = await sandbox.get_info()
        assert info.allow_internet_access is False
        assert info.network is not None and "rules" not in info.network, info.network
        await sandbox.update_network({})
        assert (await sandbox.get_info()).allow_internet_access is True


def test_sync_create_and_update_network(conn):
    literal = f"lit-{secrets.token_hex(8)}"
    with agent_sync.Sandbox.create(network=created_settings(literal), **conn) as sandbox:
        check_created(sandbox.get_info(), literal)
        # The API's camelCase names are taken too.
        sandbox.update_network({"denyOut": [API], "rules": {API: header_rule(
            {"Authorization": "Bearer abx-secret:NEXT"})}})
        info = sandbox.get_info()
        assert info.network is not None and info.network["deny_out"] == [API], info.network
        assert "allow_out" not in info.network, info.network
        assert rule_headers(info, API) == {"Authorization": "abx-secret:NEXT"}


def test_bad_settings_are_refused(conn):
    with agent_sync.Sandbox.create(**conn) as sandbox:
        before = sandbox.get_info().network
        # Refused by the SDK before any request: unknown, create-only, malformed.
        for bad, words in (({"allow_outs": ["x.test"]}, "unknown setting 'allow_outs'"),
                           ({"allow_public_traffic": False}, "set at create only"),
                           ({"allow_out": "x.test"}, "must be a list"),
                           ({"rules": {API: [{"transform": lambda ctx: {}}]}},
                            "abx-secret:NAME")):
            with pytest.raises(InvalidArgumentException, match=words):
                sandbox.update_network(bad)
        # Refused by the daemon: a header its egress proxy owns; the message names it.
        with pytest.raises(InvalidArgumentException, match="Host"):
            sandbox.update_network({"rules": {API: header_rule({"Host": "evil.test"})}})
        assert sandbox.get_info().network == before, "a refused update changed the settings"
    with pytest.raises(InvalidArgumentException, match="IPv4 only"):  # the daemon's check
        agent_sync.Sandbox.create(network={"allow_out": ["::1"]}, **conn)
    with pytest.raises(InvalidArgumentException, match="unknown setting"):
        agent_sync.Sandbox.create(network={"allowed": []}, **conn)
