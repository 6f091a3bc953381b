"""Issue 16, items 6 and 9: `abx upload`/`download` as a user expects them. Downloads carry
Content-Length (so they show progress); the bars both ways fit the terminal and show an ETA,
and never show without one; `-` is stdin or stdout, byte for byte; `--user` reads and writes
the sandbox's files as that user."""
from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import ABX_BIN, Daemon
from helpers import abx

pytestmark = pytest.mark.offline  # the `host` template needs no build

SIZE = 3 << 20  # over the bar's 1 MiB threshold
# Every byte value, repeated: a text-mode or line-ending mangling would show.
PAYLOAD = bytes(range(256)) * (SIZE // 256)


@pytest.fixture
def sandbox(daemon: Daemon) -> Iterator[str]:
    r = abx(daemon, "create", "--template", "host")
    assert r.returncode == 0, r.stderr
    sandbox_id = r.stdout.strip()
    yield sandbox_id
    abx(daemon, "kill", sandbox_id, "--yes")


def files_api(daemon: Daemon, sandbox_id: str) -> httpx.Client:
    return httpx.Client(base_url=daemon.url, timeout=60, headers={
        "X-API-KEY": daemon.api_key, "E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": "49983"})


def put(daemon: Daemon, sandbox_id: str, path: str, data: bytes) -> None:
    with files_api(daemon, sandbox_id) as api:
        r = api.post("/files", params={"path": path}, content=data,
                     headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200, r.text


def exec_out(daemon: Daemon, sandbox_id: str, *command: str) -> str:
    r = abx(daemon, "exec", sandbox_id, "--", *command)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def run_with_terminal_stderr(daemon: Daemon, columns: int, *args: str,
                             stdout_too: bool = False) -> str:
    """Runs `abx ARGS` with stderr (and stdout if `stdout_too`) on a pty `columns` wide
    (COLUMNS unset); what it drew."""
    env = {k: v for k, v in daemon.env().items() if k != "COLUMNS"}
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    try:
        proc = subprocess.Popen([str(ABX_BIN), *args], env=env, stdin=subprocess.DEVNULL,
                                stdout=slave if stdout_too else subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        drawn = b""
        while True:
            try:
                piece = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not piece:
                break
            drawn += piece
        assert proc.wait(timeout=60) == 0, drawn
    finally:
        os.close(master)
    return drawn.decode(errors="replace")


def drawn_lines(drawn: str) -> list[str]:
    """Each state of the bar as the terminal shows it."""
    text = drawn.replace("\x1b[K", "").replace("\n", "\r")
    return [line for line in text.split("\r") if line]


def test_download_sends_content_length_unless_gzip(daemon, sandbox):
    put(daemon, sandbox, "/home/user/data.bin", PAYLOAD)
    with files_api(daemon, sandbox) as api:
        plain = api.get("/files", params={"path": "/home/user/data.bin"},
                        headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200
        assert plain.headers["content-length"] == str(SIZE)
        assert "transfer-encoding" not in plain.headers
        assert plain.content == PAYLOAD
        # Compressed, the size is not known up front: chunked, as before.
        packed = api.get("/files", params={"path": "/home/user/data.bin"},
                         headers={"Accept-Encoding": "gzip"})
        assert packed.status_code == 200 and packed.headers["content-encoding"] == "gzip"
        assert "content-length" not in packed.headers
        assert packed.content == PAYLOAD
        # An empty file (or one whose size may be made up) is read to its end, as before.
        put(daemon, sandbox, "/home/user/empty", b"")
        empty = api.get("/files", params={"path": "/home/user/empty"},
                        headers={"Accept-Encoding": "identity"})
        assert empty.status_code == 200 and empty.content == b""
        # The connection still serves the next request after a sized body.
        assert api.get("/files", params={"path": "/home/user/data.bin"},
                       headers={"Accept-Encoding": "identity"}).content == PAYLOAD


@pytest.mark.parametrize("columns", [40, 100])
def test_download_bar_fits_the_terminal_and_shows_an_eta(daemon, sandbox, tmp_path, columns):
    put(daemon, sandbox, "/home/user/data.bin", PAYLOAD)
    drawn = run_with_terminal_stderr(daemon, columns, "download", sandbox,
                                     "/home/user/data.bin", str(tmp_path / "data.bin"))
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD
    lines = drawn_lines(drawn)
    assert lines, "a bar was drawn"
    assert all(len(line) < columns for line in lines), lines
    assert any("ETA " in line for line in lines), lines
    assert "100%" in lines[-1], lines


def test_upload_bar_fits_the_terminal_and_shows_an_eta(daemon, sandbox, tmp_path):
    local = tmp_path / "a-file-with-a-rather-long-name-for-a-narrow-terminal.bin"
    local.write_bytes(PAYLOAD)
    drawn = run_with_terminal_stderr(daemon, 40, "upload", sandbox, str(local),
                                     "/home/user/up.bin")
    lines = drawn_lines(drawn)
    assert lines and all(len(line) < 40 for line in lines), lines
    assert any("ETA " in line for line in lines), lines
    assert exec_out(daemon, sandbox, "stat", "-c", "%s", "/home/user/up.bin") == str(SIZE)


def test_no_bar_among_a_file_written_to_the_same_terminal(daemon, sandbox):
    put(daemon, sandbox, "/home/user/text.txt", b"x" * SIZE)
    drawn = run_with_terminal_stderr(daemon, 80, "download", sandbox, "/home/user/text.txt", "-",
                                     stdout_too=True)
    assert drawn.count("x") == SIZE and "ETA" not in drawn and "%" not in drawn


def test_no_bar_when_stderr_is_not_a_terminal(daemon, sandbox, tmp_path):
    put(daemon, sandbox, "/home/user/data.bin", PAYLOAD)
    r = abx(daemon, "download", sandbox, "/home/user/data.bin", str(tmp_path / "d.bin"))
    assert r.returncode == 0 and r.stderr == ""
    (tmp_path / "u.bin").write_bytes(PAYLOAD)
    r = abx(daemon, "upload", sandbox, str(tmp_path / "u.bin"), "/home/user/u.bin")
    assert r.returncode == 0 and r.stderr == ""


def test_dash_is_stdout_for_download_and_stdin_for_upload(daemon, sandbox, tmp_path):
    r = abx(daemon, "upload", sandbox, "-", "/home/user/from-stdin.bin", input=PAYLOAD)
    assert r.returncode == 0, r.stderr
    r = abx(daemon, "download", sandbox, "/home/user/from-stdin.bin", "-", input=b"")
    assert r.returncode == 0, r.stderr
    assert r.stdout == PAYLOAD
    assert not Path("-").exists() and not (tmp_path / "-").exists()
    # A pipe: no size known up front, still every byte.
    with subprocess.Popen([str(ABX_BIN), "download", sandbox, "/home/user/from-stdin.bin", "-"],
                          env=daemon.env(), stdout=subprocess.PIPE,
                          stdin=subprocess.DEVNULL) as p:
        piped = subprocess.run(["sha256sum"], stdin=p.stdout, capture_output=True, check=True)
    want = subprocess.run(["sha256sum"], input=PAYLOAD, capture_output=True, check=True)
    assert piped.stdout == want.stdout and p.returncode == 0


def test_dash_refuses_a_directory_transfer(daemon, sandbox):
    r = abx(daemon, "download", "-r", sandbox, "/home/user", "-")
    assert r.returncode != 0 and "tar" in r.stderr
    r = abx(daemon, "upload", "-r", sandbox, "-", "/home/user/x", input="")
    assert r.returncode != 0 and "tar" in r.stderr
    r = abx(daemon, "upload", sandbox, "-", "/home/user/", input="x")
    assert r.returncode != 0 and "full path" in r.stderr


def test_user_flag_writes_and_reads_as_that_user(daemon, sandbox, tmp_path):
    r = abx(daemon, "upload", "--user", "root", sandbox, "-", "/home/user/by-root.txt",
            input=b"secret\n")
    assert r.returncode == 0, r.stderr
    r = abx(daemon, "upload", sandbox, "-", "/home/user/by-default.txt", input=b"mine\n")
    assert r.returncode == 0, r.stderr
    assert exec_out(daemon, sandbox, "stat", "-c", "%U", "/home/user/by-root.txt") == "root"
    assert exec_out(daemon, sandbox, "stat", "-c", "%U", "/home/user/by-default.txt") == "user"
    assert abx(daemon, "exec", "--user", "root", sandbox, "--", "chmod", "600",
               "/home/user/by-root.txt").returncode == 0
    # The default user may not read root's private file; root may.
    denied = abx(daemon, "download", sandbox, "/home/user/by-root.txt", "-", input=b"")
    assert denied.returncode != 0
    r = abx(daemon, "download", "-u", "root", sandbox, "/home/user/by-root.txt", "-", input=b"")
    assert r.returncode == 0 and r.stdout == b"secret\n", r.stderr
    # A root-only directory: the default user cannot write into it.
    assert abx(daemon, "upload", sandbox, "-", "/root/nope.txt", input=b"x").returncode != 0
    assert abx(daemon, "upload", "--user", "root", sandbox, "-", "/root/yes.txt",
               input=b"x").returncode == 0


def test_upload_of_a_file_to_an_existing_dir_goes_into_it_as_cp_does(daemon, sandbox, tmp_path):
    local = tmp_path / "report.txt"
    local.write_text("into the dir\n")
    r = abx(daemon, "upload", sandbox, str(local), "/tmp")
    assert r.returncode == 0, r.stderr
    r = abx(daemon, "exec", sandbox, "--", "cat", "/tmp/report.txt")
    assert r.stdout == "into the dir\n", r.stderr
    # A path that is not a directory is the file's new name, as before.
    r = abx(daemon, "upload", sandbox, str(local), "/tmp/renamed.txt")
    assert r.returncode == 0, r.stderr
    assert abx(daemon, "exec", sandbox, "--", "cat", "/tmp/renamed.txt").stdout == "into the dir\n"
