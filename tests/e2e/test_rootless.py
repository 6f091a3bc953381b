"""The daemon works without root where unprivileged user namespaces are
enabled; limits that need delegated cgroups degrade with a logged warning."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from harness import ABX_BIN, private_state_dir
from helpers import wait_until

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def unprivileged_userns_works() -> bool:
    r = subprocess.run(NOBODY + ["unshare", "--user", "--map-root-user", "true"], capture_output=True)
    return r.returncode == 0


pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is missing"),
]


@pytest.fixture
def rootless_daemon():
    if not unprivileged_userns_works():
        pytest.skip("unprivileged user namespaces are disabled on this kernel")
    home = private_state_dir("abx-rootless-")
    os.chown(home, 65534, 65534)
    state = home / "state"
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    proc = subprocess.Popen(NOBODY + [str(ABX_BIN), "serve", "--listen", "127.0.0.1:0", "--data-dir",
                                      str(state), "--address-file", str(state / "addr")],
                            env=env, stdout=open(home / "daemon.log", "wb"), stderr=subprocess.STDOUT)
    wait_until(lambda: (state / "addr").exists() or proc.poll() is not None, timeout=15,
               what="the rootless daemon to write its address")
    assert (state / "addr").exists(), (home / "daemon.log").read_text()
    cli_env = dict(env, ABX_SANDBOX_API_URL=(state / "addr").read_text().strip(),
                   ABX_SANDBOX_API_KEY=(state / "api_key").read_text().strip(), ABX_STATE_DIR=str(state))
    yield home, cli_env
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(home, ignore_errors=True)


def run_as_nobody(env, *args, input=None):
    return subprocess.run(NOBODY + [str(ABX_BIN), *args], env=env, capture_output=True, text=True,
                          input=input, timeout=60)


def test_rootless_daemon_runs_the_seed_flow_and_warns_about_limits(rootless_daemon):
    home, env = rootless_daemon
    # `host`: the Debian base is built by mmdebstrap as root (its files owned
    # by root's sandbox id range), which an unprivileged daemon cannot do.
    created = run_as_nobody(env, "create", "--template", "host")
    sandbox_id = created.stdout.strip()
    assert sandbox_id, created.stderr
    try:
        script = home / "hello.py"
        script.write_text("print(6 * 7)\n")
        script.chmod(0o644)
        assert run_as_nobody(env, "upload", sandbox_id, str(script), "/home/user/hello.py").returncode == 0
        r = run_as_nobody(env, "exec", sandbox_id, "--", "python", "/home/user/hello.py")
        assert (r.returncode, r.stdout) == (0, "42\n"), r.stderr
        # root inside maps to the unprivileged daemon user outside
        r = run_as_nobody(env, "exec", sandbox_id, "--", "cat", "/proc/self/uid_map")
        assert r.stdout.split()[1] == "65534"
    finally:
        assert run_as_nobody(env, "kill", sandbox_id, "--yes").returncode == 0
    log = (home / "daemon.log").read_text()
    assert "cgroup limits unavailable" in log  # degraded loudly, never silently
