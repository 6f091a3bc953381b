"""A sandbox's network settings in E2B's Python shape (`network=` of `create`, the argument of
`update_network`, `SandboxInfo.network`) to and from the API's JSON (no I/O).

Keys are E2B's snake_case (`allow_out`, `deny_out`, `rules`, `egress_proxy`, `dns_servers`,
`allow_public_traffic`, `mask_request_host`, `https_ports`); the API's camelCase names are taken
too. A rule header value may name a stored secret, `abx-secret:NAME` (also inside a value, as in
`"Bearer abx-secret:NAME"`): the daemon puts the secret in at its egress proxy, so neither the
SDK nor the sandbox ever holds it, and the sandbox's info shows the reference, never a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgumentException

ALL_TRAFFIC = "0.0.0.0/0"

# E2B's snake_case name -> the API's name. Egress fields may change on a live sandbox.
EGRESS_FIELDS = {"allow_out": "allowOut", "deny_out": "denyOut", "rules": "rules",
                 "egress_proxy": "egressProxy", "dns_servers": "dnsServers"}
INGRESS_FIELDS = {"allow_public_traffic": "allowPublicTraffic",
                  "mask_request_host": "maskRequestHost", "https_ports": "httpsPorts"}
PROXY_FIELDS = {"server_name": "serverName", "ca_cert": "caCert"}


@dataclass(frozen=True)
class NetworkSelectorContext:
    """What an `allow_out`/`deny_out` callable is given (E2B's SandboxNetworkSelectorContext)."""

    all_traffic: str
    """"0.0.0.0/0": every destination."""
    rules: Mapping[str, Any]
    """The `rules` of the same settings, by host."""


def create_network(network: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The create body's `network` (None: the daemon's default, all egress allowed)."""
    if network is None:
        return None
    return _translate(network, {**EGRESS_FIELDS, **INGRESS_FIELDS}, "network")


def update_network(network: Mapping[str, Any]) -> dict[str, Any]:
    """The PUT /sandboxes/{id}/network body: egress fields only, all replaced at once."""
    if not isinstance(network, Mapping):
        raise InvalidArgumentException(
            f"update_network: network must be a dict like {{'allow_out': [...]}}, not {network!r}")
    fixed = [key for key in network
             if key in INGRESS_FIELDS or key in INGRESS_FIELDS.values()]
    if fixed:
        raise InvalidArgumentException(
            f"update_network: {', '.join(map(str, fixed))} is set at create only; an update "
            f"takes {', '.join(EGRESS_FIELDS)} and allow_internet_access")
    settings = dict(network)
    access = settings.pop("allow_internet_access", None)
    body = _translate(settings, EGRESS_FIELDS, "network")
    if access is not None:
        if not isinstance(access, bool):
            raise InvalidArgumentException(
                f"allow_internet_access must be True or False, not {access!r}")
        body["allow_internet_access"] = access
    return body


def network_info(shown: Any) -> dict[str, Any] | None:
    """`SandboxInfo.network` from the API's `network`: E2B's snake_case SandboxNetworkInfo."""
    if not isinstance(shown, dict):
        return None
    names = {api: ours for ours, api in {**EGRESS_FIELDS, **INGRESS_FIELDS}.items()}
    out: dict[str, Any] = {names.get(str(key), str(key)): value for key, value in shown.items()}
    proxy = out.get("egress_proxy")
    if isinstance(proxy, dict) and isinstance(proxy.get("tls"), dict):
        tls_names = {api: ours for ours, api in PROXY_FIELDS.items()}
        proxy["tls"] = {tls_names.get(key, key): value for key, value in proxy["tls"].items()}
    return out


def _translate(network: Mapping[str, Any], fields: dict[str, str],
               where: str) -> dict[str, Any]:
    if not isinstance(network, Mapping):
        raise InvalidArgumentException(
            f"{where} must be a dict like {{'allow_out': [...], 'rules': {{...}}}}, "
            f"not {network!r}")
    api_names = set(fields.values())
    body: dict[str, Any] = {}
    for key, value in network.items():
        name = fields.get(key, key if key in api_names else None)
        if name is None:
            raise InvalidArgumentException(
                f"{where}: unknown setting {key!r}; known: {', '.join(fields)}")
        if value is not None:
            body[name] = value
    rules = body.get("rules") or {}
    if "rules" in body:
        body["rules"] = _rules(rules)
    for name in ("allowOut", "denyOut"):
        if name in body:
            body[name] = _selector(body[name], rules, name)
    if "egressProxy" in body:
        body["egressProxy"] = _egress_proxy(body["egressProxy"])
    return body


def _selector(value: Any, rules: Mapping[str, Any], name: str) -> list[str]:
    """A destination list, or E2B's callable form given the context."""
    if callable(value):
        value = value(NetworkSelectorContext(ALL_TRAFFIC, dict(rules)))
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise InvalidArgumentException(
            f"network.{name} must be a list of IPv4 addresses, CIDRs or host names "
            f"(or a callable returning one), not {value!r}")
    return list(value)


def _rules(rules: Any) -> dict[str, Any]:
    if not isinstance(rules, Mapping):
        raise InvalidArgumentException(
            "network rules must be a dict of host -> list of rules, e.g. {'api.example.com': "
            "[{'transform': {'headers': {'Authorization': 'Bearer abx-secret:API_KEY'}}}]}")
    out: dict[str, Any] = {}
    for host, host_rules in rules.items():
        if isinstance(host_rules, Mapping):
            host_rules = [host_rules]
        out[host] = [_rule(host, rule) for rule in host_rules]
    return out


def _rule(host: str, rule: Any) -> Any:
    transform = rule.get("transform") if isinstance(rule, Mapping) else None
    if callable(transform):
        # E2B's callable transform injects workload-identity tokens; abx has none.
        raise InvalidArgumentException(
            f"network rules for {host!r}: a transform must be a dict, not a callable (abx has "
            "no workload identity); put 'abx-secret:NAME' in a header value to send a secret")
    return rule


def _egress_proxy(proxy: Any) -> dict[str, Any]:
    if not isinstance(proxy, Mapping) or not isinstance(proxy.get("address"), str):
        raise InvalidArgumentException(
            "network egress_proxy must be a dict with a string 'address' "
            "(e.g. 'proxy.example.com:1080')")
    out = {key: value for key, value in proxy.items() if value is not None}
    tls = out.get("tls")
    if isinstance(tls, bool):
        out["tls"] = {"enabled": tls}
    elif isinstance(tls, Mapping):
        out["tls"] = {"enabled": True,
                      **{PROXY_FIELDS.get(key, key): value for key, value in tls.items()}}
    return out
