"""`abx exec` without -t copies a sandbox's output to the user's terminal: escape sequences in
it (OSC 52 writes the clipboard) must not reach the terminal. Sanitized on a terminal;
byte-exact through a pipe or with --raw (issue 12, small ones)."""
from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Iterator

import pytest
from harness import ABX_BIN, Daemon, start_daemon, stop_daemon
from helpers import abx

pytestmark = pytest.mark.offline  # the `host` template needs no build

CLIPBOARD = "\x1b]52;c;ZWNobyBvd25lZA==\x07"
# What the command prints, to stdout and to stderr.
PRINTF = r"printf 'before\033]52;c;ZWNobyBvd25lZA==\007after \033[31mred\033[0m\n'"
RAW_LINE = f"before{CLIPBOARD}after \x1b[31mred\x1b[0m\n".encode()
SANITIZED_LINE = b"beforeafter \x1b[31mred\x1b[0m\r\n"  # the pty adds the \r


@pytest.fixture(scope="module")
def prebuilt_templates() -> None:
    """The host template needs no build."""


@pytest.fixture(scope="module")
def host_sandbox(tmp_path_factory) -> Iterator[tuple[Daemon, str]]:
    state = tmp_path_factory.mktemp("abx-esc")
    state.chmod(0o755)
    d = start_daemon(state / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host"})
            assert r.status_code == 201, r.text
        yield d, r.json()["sandboxID"]
    finally:
        stop_daemon(d)


def exec_on_a_terminal(d: Daemon, sandbox_id: str, *args: str) -> bytes:
    """Runs `abx exec` with stdout and stderr on a pty; returns what the terminal got."""
    main, secondary = pty.openpty()
    try:
        proc = subprocess.Popen([str(ABX_BIN), "exec", *args, sandbox_id, "--",
                                 f"{PRINTF}; {PRINTF} >&2"],
                                stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary,
                                env=d.env())
        os.close(secondary)
        secondary = -1
        received = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer closed the pty
                break
            if not chunk:
                break
            received += chunk
        assert proc.wait(60) == 0, received
        return received
    finally:
        os.close(main)
        if secondary >= 0:
            os.close(secondary)


def test_escape_sequences_do_not_reach_a_terminal(host_sandbox):
    d, sandbox_id = host_sandbox
    seen = exec_on_a_terminal(d, sandbox_id)
    assert seen == SANITIZED_LINE * 2, seen
    assert b"]52;" not in seen
    assert d.proc.poll() is None


def test_raw_passes_them_on(host_sandbox):
    d, sandbox_id = host_sandbox
    seen = exec_on_a_terminal(d, sandbox_id, "--raw")
    assert seen == RAW_LINE.replace(b"\n", b"\r\n") * 2, seen


def test_a_pipe_gets_every_byte(host_sandbox):
    d, sandbox_id = host_sandbox
    ran = subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", f"{PRINTF}; {PRINTF} >&2"],
                         check=False, capture_output=True, env=d.env(), timeout=60,
                         stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == RAW_LINE
    assert ran.stderr == RAW_LINE
    assert abx(d, "exec", sandbox_id, "--", "true").returncode == 0
