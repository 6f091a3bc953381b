"""Issue 13: an admin's extra CA bundle (ABX_SANDBOX_EXTRA_CA_FILE, a corporate CA) is trusted
by every sandbox with a network, for HTTPS the daemon does not intercept, beside the egress
proxy's own CA for hosts with header rules. Only the file's certificates reach a sandbox; a
file that is not a CA bundle stops the daemon with a one-line error."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import private_state_dir, start_daemon, stop_daemon
from netcheck import assert_reached, create, fetch_all, kill, sh
from world import (
    World,
    WorldDaemon,
    leftovers,
    start_daemon_in_world,
    stop_daemon_in_world,
)

pytestmark = pytest.mark.net

OWN_FILE = "/etc/ssl/certs/abx-egress-ca.pem"  # the daemon's CAs for Node (NODE_EXTRA_CA_CERTS)
RULES = {"www.example.test": [{"transform": {"headers": {"X-Injected": "v1"}}}]}


def junk_key() -> str:
    return subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519"], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def ca_daemon(net_world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorldDaemon]:
    """A daemon in the world told to have sandboxes trust the world's CA, given in a file that
    also holds a private key (which must never reach a sandbox)."""
    bundle = tmp_path_factory.mktemp("ca") / "corporate.pem"
    bundle.write_text(net_world.ca_file.read_text() + junk_key())
    state = private_state_dir("abx-net-ca-")
    d = start_daemon_in_world(net_world, state / "state",
                              env={"ABX_SANDBOX_EXTRA_CA_FILE": str(bundle)})
    try:
        yield d
    finally:
        for sandbox_id in d.sandbox_ids:
            kill(d, sandbox_id)
        alive = d.proc.poll() is None
        stop_daemon_in_world(d)
        left = leftovers(d)
        if not left:
            shutil.rmtree(state, ignore_errors=True)
        assert alive, "the daemon died"
        assert not left, f"the stopped daemon left (see {state}):\n" + "\n".join(left)


def test_direct_https_verifies_against_the_extra_ca(net_world, ca_daemon):
    sandbox = create(ca_daemon)
    # No --cacert: the system bundle has the world's CA, as it would a corporate one.
    (direct,) = fetch_all(ca_daemon, sandbox, "https://api.example.test/headers")
    assert_reached(net_world, direct)
    python = sh(ca_daemon, sandbox, "python3 -c \"import urllib.request; print(urllib.request."
                "urlopen('https://api.example.test/status/204', timeout=6).status)\"")
    assert python.stdout.strip() == "204", python.stderr
    own = sh(ca_daemon, sandbox, f"cat {OWN_FILE} /etc/ssl/certs/ca-certificates.crt")
    assert own.returncode == 0, own.stderr
    assert "BEGIN CERTIFICATE" in own.stdout and "PRIVATE KEY" not in own.stdout
    assert ca_daemon.proc.poll() is None


def test_rules_hosts_and_direct_hosts_both_verify(net_world, ca_daemon):
    """The egress CA (intercepted www) and the extra CA (direct api) side by side."""
    sandbox = create(ca_daemon, network={"rules": RULES})
    www, api = fetch_all(ca_daemon, sandbox, "https://www.example.test/headers",
                         "https://api.example.test/headers")
    assert assert_reached(net_world, www)["headers"].get("X-Injected") == "v1"
    assert "X-Injected" not in assert_reached(net_world, api)["headers"]
    assert ca_daemon.proc.poll() is None


def start_fails(tmp_path: Path, ca_file: Path) -> str:
    """Starts a daemon told to use `ca_file`; asserts it exits with 1 (one that starts is
    stopped first) and returns its log."""
    try:
        d = start_daemon(tmp_path / "state", env={"ABX_SANDBOX_EXTRA_CA_FILE": str(ca_file)})
    except RuntimeError as e:
        assert "daemon exited with 1" in str(e)
        return (tmp_path / "state" / "daemon.log").read_text()
    stop_daemon(d)
    pytest.fail(f"the daemon started with ABX_SANDBOX_EXTRA_CA_FILE={ca_file}")


@pytest.mark.parametrize("content", ["", "not a certificate\n", "key"], ids=["empty", "text", "key-only"])
def test_a_file_without_certificates_stops_the_daemon(tmp_path: Path, content: str):
    bad = tmp_path / "bad.pem"
    bad.write_text(junk_key() if content == "key" else content)
    log = start_fails(tmp_path, bad)
    assert f"ABX_SANDBOX_EXTRA_CA_FILE={bad}: holds no PEM certificate" in log
    assert "PRIVATE KEY" not in log


def test_a_missing_file_stops_the_daemon(tmp_path: Path):
    absent = tmp_path / "absent.pem"
    log = start_fails(tmp_path, absent)
    assert f"ABX_SANDBOX_EXTRA_CA_FILE={absent}: open: No such file" in log
