"""Issue 16, item 12: the local daemon's port is stable. It remembers its port in its data dir
and comes back on it; when that port is taken it says so loudly (the CLI's output and the
daemon's log name the old and the new port), and an SDK Sandbox held across the restart finds
the daemon again on its own."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ABX_BIN, REPO

pytestmark = pytest.mark.offline  # the `host` template needs no build

# Holds one sandbox across daemon restarts: a line on stdin asks for one command's output.
SDK_SCRIPT = """
import sys
from agent_sandbox.sync import Sandbox
sandbox = Sandbox.create(template="host")
print(sandbox.sandbox_id, flush=True)
for line in sys.stdin:
    print(sandbox.commands.run("echo alive").stdout.strip(),
          sandbox.files.read("/home/user/kept.txt"), flush=True)
sandbox.kill()
"""


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ABX_BIN), *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


@pytest.fixture
def env(state_dir: Path) -> Iterator[dict[str, str]]:
    """The environment of a user whose CLI and SDK find the local daemon on their own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(state_dir / "state"), ABX_CONFIG_DIR=str(state_dir / "config"),
               ABX_BIN=str(ABX_BIN), PYTHONPATH=str(REPO / "sdk" / "python"))
    yield env
    run(env, "kill", "--all", "--yes")  # `daemon stop` leaves sandboxes running
    run(env, "daemon", "stop")


def start(env: dict[str, str]) -> tuple[int, str]:
    r = run(env, "daemon", "start")
    assert r.returncode == 0, r.stderr
    address = (Path(env["ABX_STATE_DIR"]) / "daemon.addr").read_text().strip()
    return int(address.rsplit(":", 1)[1]), r.stdout + r.stderr


def stop(env: dict[str, str]) -> None:
    r = run(env, "daemon", "stop")
    assert r.returncode == 0, r.stderr


def taken(port: int) -> socket.socket:
    """Another program listening on `port`."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen()
    return holder


def test_a_restarted_daemon_keeps_its_port(env):
    first, _ = start(env)
    assert (Path(env["ABX_STATE_DIR"]) / "daemon.port").read_text().strip() == str(first)
    stop(env)
    again, said = start(env)
    assert again == first
    assert "WARNING" not in said


def test_a_taken_port_is_named_loudly_and_the_sdk_follows(env):
    first, _ = start(env)
    holder_of_sdk = subprocess.Popen([sys.executable, "-c", SDK_SCRIPT], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        sandbox_id = holder_of_sdk.stdout.readline().strip()
        assert re.fullmatch(r"[a-z0-9]+", sandbox_id), "the SDK made a sandbox"
        r = subprocess.run([str(ABX_BIN), "upload", sandbox_id, "-", "/home/user/kept.txt"],
                           input="kept", capture_output=True, text=True, env=env, timeout=60,
                           check=False)
        assert r.returncode == 0, r.stderr

        # Restarted on the same port: the SDK object carries on.
        stop(env)
        same, _ = start(env)
        assert same == first
        holder_of_sdk.stdin.write("go\n"), holder_of_sdk.stdin.flush()
        assert holder_of_sdk.stdout.readline() == "alive kept\n"

        # Restarted while another program holds its port: a new port, said loudly.
        stop(env)
        with taken(first):
            moved, said = start(env)
            assert moved != first
            assert f"port {first} is taken" in said and f"127.0.0.1:{moved}" in said, said
            log = (Path(env["ABX_STATE_DIR"]) / "daemon.log").read_text()
            assert f"PORT CHANGED: listening on port {moved}, not on port {first}" in log
            # The SDK object finds the daemon at its new address on its own.
            holder_of_sdk.stdin.write("go\n"), holder_of_sdk.stdin.flush()
            assert holder_of_sdk.stdout.readline() == "alive kept\n"
            listed = run(env, "list")
            assert sandbox_id in listed.stdout, listed.stderr
        # The new port is the one remembered now: the next start keeps it.
        stop(env)
        assert start(env)[0] == moved
        holder_of_sdk.stdin.close()
        assert holder_of_sdk.wait(timeout=60) == 0
    finally:
        holder_of_sdk.kill()
        holder_of_sdk.wait()


def test_the_first_start_says_so_when_the_default_port_is_taken(env):
    holder = None
    try:
        holder = taken(49980)
    except OSError:
        pass  # another program holds it already: just as good
    try:
        port, said = start(env)
    finally:
        if holder:
            holder.close()
    assert port != 49980
    assert "port 49980 is taken" in said and f"127.0.0.1:{port}" in said, said
    log = (Path(env["ABX_STATE_DIR"]) / "daemon.log").read_text()
    assert f"PORT CHANGED: listening on port {port}, not on port 49980" in log
