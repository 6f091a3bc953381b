"""Issue 31 item 5, "a header rule can send a team secret to another site": a rule may not set
Host or a hop-by-hop/framing header; a secret goes only in the headers its owner named when
setting it (Authorization unless told otherwise); a response header that echoes a secret the
proxy sent never reaches the sandbox; and list and detail never show a rule's literal header
values or a SOCKS proxy's username (any key of the team reads them)."""
from __future__ import annotations

import secrets

import pytest
from helpers import abx
from netcheck import create, fetch, sh, world_saw

pytestmark = pytest.mark.net

HOST = "www.example.test"
REFUSED = ["Host", "Connection", "Content-Length", "Transfer-Encoding", "Upgrade", "TE",
           "Trailer", "Proxy-Authorization", "Keep-Alive"]


def rules(headers: dict[str, str]) -> dict:
    return {"rules": {HOST: [{"transform": {"headers": headers}}]}}


def store_secret(d, *headers: str, cli: bool = False) -> tuple[str, str]:
    """A new secret for HOST, to go in `headers` (none: the default), set with
    `abx secrets set` or PUT /abx/v1/secrets/NAME; returns (name, value)."""
    name, value = f"tok_{secrets.token_hex(4)}", f"s3cret-{secrets.token_hex(12)}"
    if cli:
        options = [arg for h in headers for arg in ("--header", h)]
        stored = abx(d, "secrets", "set", name, "--host", HOST, *options, input=value)
        assert stored.returncode == 0, stored.stderr
        return name, value
    body = {"value": value, "hosts": [HOST], **({"headers": list(headers)} if headers else {})}
    with d.api() as api:
        r = api.put(f"/abx/v1/secrets/{name}", json=body)
    assert r.status_code == 204, r.text
    return name, value


def refusal(r) -> str:
    """The one-line message of a 400."""
    assert r.status_code == 400, f"{r.status_code}: {r.text}"
    message = r.json()["message"]
    assert "\n" not in message
    return message


@pytest.mark.parametrize("header", REFUSED)
def test_a_rule_may_not_set_host_or_framing_headers(net_daemon, header):
    """`{"Host": "attacker.example", "Authorization": "Bearer abx-secret:KEY"}` sent the
    secret to another virtual host of the same address: refused on create and on update."""
    network = rules({header: "attacker.example", "X-Fine": "1"})
    with net_daemon.api() as api:
        created = api.post("/sandboxes", json={"templateID": "host", "network": network})
    assert header in refusal(created)
    sandbox = create(net_daemon, network=rules({"X-Fine": "1"}))
    with net_daemon.api() as api:
        updated = api.put(f"/sandboxes/{sandbox}/network", json=network)
    assert header in refusal(updated)


def test_a_secret_goes_only_in_the_headers_its_owner_named(net_world, net_daemon):
    by_default, value = store_secret(net_daemon, cli=True)
    in_api_key, _ = store_secret(net_daemon, "X-Api-Key", cli=True)
    listed = [line.split() for line in abx(net_daemon, "secrets", "list").stdout.splitlines()]
    assert [by_default, HOST, "Authorization"] in listed
    assert [in_api_key, HOST, "X-Api-Key"] in listed
    # Origin: a server that reflects it in Access-Control-Allow-Origin hands the secret back.
    for name, header in ((by_default, "Origin"), (in_api_key, "Authorization")):
        network = rules({header: f"abx-secret:{name}"})
        with net_daemon.api() as api:
            created = api.post("/sandboxes", json={"templateID": "host", "network": network})
        message = refusal(created)
        assert name in message and header in message, message
    sandbox = create(net_daemon, network=rules({"Authorization": f"Bearer abx-secret:{by_default}"}))
    with net_daemon.api() as api:
        updated = api.put(f"/sandboxes/{sandbox}/network",
                          json=rules({"Origin": f"abx-secret:{by_default}"}))
    message = refusal(updated)
    assert by_default in message and "Origin" in message, message
    f = fetch(net_daemon, sandbox, f"https://{HOST}/status/204")
    assert f.answered(204), str(f)
    assert world_saw(net_world, f)[0]["headers"].get("Authorization") == f"Bearer {value}"


def test_a_secret_moved_out_of_a_header_is_no_longer_sent_in_it(net_world, net_daemon):
    """The owner narrows the headers after a rule was made: the proxy asks again per request."""
    name, value = store_secret(net_daemon, "Origin")
    sandbox = create(net_daemon, network=rules({"Origin": f"abx-secret:{name}"}))
    assert abx(net_daemon, "secrets", "set", name, "--host", HOST, input=value).returncode == 0
    f = fetch(net_daemon, sandbox, f"http://{HOST}/status/204")
    assert f.status == 502 or f.exit_code != 0, str(f)
    assert not world_saw(net_world, f), "the request went out with the secret in Origin"


def test_a_response_header_echoing_a_secret_never_reaches_the_sandbox(net_world, net_daemon):
    """The server reflects Origin (the secret, where its owner allowed it) into
    Access-Control-Allow-Origin: the sandbox gets the answer without that header."""
    name, value = store_secret(net_daemon, "Origin")
    sandbox = create(net_daemon, network=rules({"Origin": f"abx-secret:{name}", "X-Mark": "m"}))
    for url in (f"http://{HOST}/cors", f"https://{HOST}/cors"):
        f = fetch(net_daemon, sandbox, url, "-D", "-")
        assert f.answered(204), str(f)
        (seen,) = world_saw(net_world, f)
        assert seen["headers"].get("Origin") == value, "the secret did not reach the server"
        assert value not in f.body + f.stderr, f"the sandbox saw the secret: {f.body}"
        assert "access-control-allow-origin" not in f.body.lower(), f.body
        assert "content-type: text/plain" in f.body.lower(), f"other headers lost: {f.body}"
    # Keep-alive: several requests and answers on one connection stay in step.
    two = sh(net_daemon, sandbox, f"curl -sS -o /dev/null -o /dev/null -D /tmp/heads "
             f"-w '%{{http_code}} ' http://{HOST}/cors http://{HOST}/headers; echo; cat /tmp/heads")
    assert two.returncode == 0 and value not in two.stdout, two.stdout
    assert two.stdout.split("\n")[0].split() == ["204", "200"], two.stdout


def test_list_and_detail_show_no_literal_header_value_or_proxy_username(net_daemon):
    literal, user, password = (f"{what}-{secrets.token_hex(8)}" for what in ("lit", "user", "pw"))
    network = {**rules({"X-Team-Token": literal, "Authorization": "Bearer abx-secret:SOME_KEY"}),
               "egressProxy": {"address": "socks.example.test:1080", "username": user,
                               "password": password}}
    sandbox = create(net_daemon, network=network)
    with net_daemon.api() as api:
        shown = {path: api.get(path) for path in
                 (f"/sandboxes/{sandbox}", "/sandboxes", "/v2/sandboxes")}
    for path, r in shown.items():
        assert r.status_code == 200, r.text
        for hidden in (literal, user, password):
            assert hidden not in r.text, f"{path} shows {hidden}"
    detail = shown[f"/sandboxes/{sandbox}"].json()["network"]
    headers = detail["rules"][HOST][0]["transform"]["headers"]
    assert set(headers) == {"X-Team-Token", "Authorization"}
    assert headers["Authorization"] == "abx-secret:SOME_KEY"
    assert detail["egressProxy"]["address"] == "socks.example.test:1080"
    for command in (("info", sandbox), ("network", "show", sandbox)):
        printed = abx(net_daemon, *command)
        assert printed.returncode == 0, printed.stderr
        assert literal not in printed.stdout and user not in printed.stdout, command
