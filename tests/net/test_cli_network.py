"""Issue 13's CLI: `abx create --no-internet/--allow-out/--deny-out` and `abx network
show|update`, driving the real binary against the daemon in the test world."""
from __future__ import annotations

import json
import subprocess

import pytest
from harness import ABX_BIN
from netcheck import assert_blocked, assert_reached, fetch, kill
from world import WWW, World, WorldDaemon

pytestmark = pytest.mark.net

API = "203.0.113.11"


def abx(d: WorldDaemon, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ABX_BIN), *args], env=d.env(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def show(d: WorldDaemon, sandbox_id: str) -> dict:
    r = abx(d, "network", "show", sandbox_id)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_create_without_internet_then_open_it_then_deny_one_address(
        net_world: World, net_daemon: WorldDaemon):
    r = abx(net_daemon, "create", "--template", "host", "--no-internet")
    assert r.returncode == 0, r.stderr
    sandbox = r.stdout.strip()
    try:
        assert show(net_daemon, sandbox)["allowInternetAccess"] is False
        info = abx(net_daemon, "info", sandbox, "--json")
        assert json.loads(info.stdout)["allowInternetAccess"] is False
        assert ["NETWORK", "none"] in [line.split(None, 1) for line in abx(
            net_daemon, "info", sandbox).stdout.splitlines()]
        assert_blocked(net_world, fetch(net_daemon, sandbox, f"http://{WWW}/cli-closed"))

        r = abx(net_daemon, "network", "update", sandbox)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["allowInternetAccess"] is True
        assert_reached(net_world, fetch(net_daemon, sandbox, f"http://{WWW}/cli-open"))

        r = abx(net_daemon, "network", "update", sandbox, "--deny-out", WWW)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["network"]["denyOut"] == [WWW]
        assert_blocked(net_world, fetch(net_daemon, sandbox, f"http://{WWW}/cli-denied"))
        assert_reached(net_world, fetch(net_daemon, sandbox, f"http://{API}/cli-other"))
    finally:
        kill(net_daemon, sandbox)


def test_create_with_an_allow_list(net_world: World, net_daemon: WorldDaemon):
    r = abx(net_daemon, "create", "--template", "host", "--deny-out", "0.0.0.0/0",
            "--allow-out", "api.example.test")
    assert r.returncode == 0, r.stderr
    sandbox = r.stdout.strip()
    try:
        network = show(net_daemon, sandbox)["network"]
        assert network["allowOut"] == ["api.example.test"]
        listed = abx(net_daemon, "list")
        row = next(line for line in listed.stdout.splitlines() if line.startswith(sandbox))
        assert row.rstrip().endswith("allow 1, deny all"), listed.stdout
        info = abx(net_daemon, "info", sandbox)
        assert info.returncode == 0, info.stderr
        lines = [line.split(None, 1) for line in info.stdout.splitlines()]
        assert ["NETWORK", "allow 1, deny all"] in lines
        assert ["allowOut", "api.example.test"] in lines and ["denyOut", "0.0.0.0/0"] in lines
        assert_reached(net_world, fetch(net_daemon, sandbox, "http://api.example.test/cli-allowed"))
        assert_blocked(net_world, fetch(net_daemon, sandbox, f"http://{WWW}/cli-not-allowed"))
    finally:
        kill(net_daemon, sandbox)


def test_bad_destinations_get_a_one_line_error(net_daemon: WorldDaemon):
    for bad in ("10.0.0.0/33", "::1", "not a host", "*"):
        r = abx(net_daemon, "create", "--template", "host", "--allow-out", bad)
        assert r.returncode != 0
        assert "allowOut" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
