"""provider="local" finds the daemon like `abx` does, and starts it when none answers."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ABX_BIN = Path(os.environ.get("ABX_BIN", Path(__file__).resolve().parents[2] / "build" / "abx"))

SCRIPT = """
from agent_sandbox.sync import Sandbox
with Sandbox.create() as sandbox:
    print(sandbox.commands.run("echo autostarted").stdout, end="")
"""


@pytest.mark.needs_template  # its own daemon builds base from the shared mmdebstrap cache
def test_create_starts_the_daemon_when_none_answers():
    # Short: the unix socket paths of the sandboxes live in it.
    tmp_path = Path(tempfile.mkdtemp(prefix="abx-sdk-"))
    tmp_path.chmod(0o711)
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(state), ABX_CONFIG_DIR=str(tmp_path / "config"),
               ABX_BIN=str(ABX_BIN))
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "autostarted\n"
        assert (state / "daemon.addr").exists()
    finally:
        subprocess.run([str(ABX_BIN), "daemon", "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_existing_daemon_is_found_through_the_state_dir(daemon, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_SANDBOX_")}
    env.update(ABX_STATE_DIR=str(daemon.data_dir), ABX_CONFIG_DIR=str(tmp_path),
               ABX_BIN=str(tmp_path / "absent"))
    done = subprocess.run([sys.executable, "-c", SCRIPT.replace("autostarted", "found")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "found\n"


def dead_url() -> str:
    """A loopback URL nobody listens on: a port the kernel gave, then closed."""
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


DEAD_SCRIPT = """
import sys, time
from agent_sandbox.sync import Sandbox
started = time.monotonic()
try:
    Sandbox.create(**({"api_url": sys.argv[1]} if sys.argv[2] == "arg" else {}))
except Exception as error:
    print(type(error).__name__, round(time.monotonic() - started, 1), error)
"""


@pytest.mark.parametrize("given_by", ["arg", "env"])
def test_an_explicit_dead_url_fails_at_once_naming_it(tmp_path: Path, given_by: str):
    """With api_url= or ABX_SANDBOX_API_URL, the SDK neither starts the local daemon nor waits
    20 s for the URL: it fails at once, naming it (the default still auto-starts: above)."""
    url = dead_url()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ABX_")}
    env.update(ABX_STATE_DIR=str(tmp_path / "state"), ABX_CONFIG_DIR=str(tmp_path / "config"),
               ABX_BIN=str(ABX_BIN), ABX_SANDBOX_API_KEY="e2b_unused")
    if given_by == "env":
        env["ABX_SANDBOX_API_URL"] = url
    done = subprocess.run([sys.executable, "-c", DEAD_SCRIPT, url, given_by], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    name, seconds, message = done.stdout.split(" ", 2)
    assert name == "SandboxException", done.stdout
    assert float(seconds) < 5, f"it waited {seconds} s"
    assert url in message and "ABX_SANDBOX_API_URL" in message
    assert not (tmp_path / "state" / "daemon.addr").exists(), "no local daemon was started"
