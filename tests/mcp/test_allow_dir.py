"""`abx mcp serve --allow-dir`: `/`, the user's home and a directory holding it are refused at
start with one line saying what to pass instead; a project directory under the home is fine."""
from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from harness import ABX_BIN

pytestmark = pytest.mark.offline  # refused before any daemon is contacted

# An endpoint that is never contacted: with it, `serve` starts no local daemon, and with stdin
# closed an accepted server ends at once.
NO_DAEMON = {"ABX_SANDBOX_API_URL": "http://127.0.0.1:9", "ABX_SANDBOX_API_KEY": "unused"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "code" / "project").mkdir(parents=True)
    return home


def serve(home: Path | None, *allow_dirs: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **NO_DAEMON)
    env.pop("HOME", None)
    if home is not None:
        env["HOME"] = str(home)
    args = [arg for d in allow_dirs for arg in ("--allow-dir", d)]
    return subprocess.run([ABX_BIN, "mcp", "serve", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=30)


def assert_refused(r: subprocess.CompletedProcess, *words: str) -> str:
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert r.stdout == ""
    return lines[0]


def test_root_is_refused_however_spelled(home, tmp_path):
    (tmp_path / "to-root").symlink_to("/")
    for spelling in ["/", "//", "/tmp/..", str(tmp_path / "to-root"), str(tmp_path / "to-root") + "/"]:
        line = assert_refused(serve(home, spelling), "every file of the host",
                              "pass the project directory instead", "--allow-dir")
        assert line.startswith(f"abx: --allow-dir {spelling}")


def test_home_is_refused_however_spelled(home, tmp_path):
    (tmp_path / "to-home").symlink_to(home)
    for spelling in [str(home), str(home) + "/", str(home / "code" / ".."),
                     str(tmp_path / "to-home")]:
        line = assert_refused(serve(home, spelling), "is your home directory",
                              f"--allow-dir {home}/myproject")
        assert line.startswith(f"abx: --allow-dir {spelling}")


def test_a_directory_holding_home_is_refused(home, tmp_path):
    assert_refused(serve(home, str(tmp_path)), f"holds your home directory {home}")


def test_one_refused_dir_among_good_ones_refuses_the_start(home):
    assert_refused(serve(home, str(home / "code" / "project"), str(home)), "is your home directory")


def test_passwd_home_is_refused_when_home_is_unset():
    passwd_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    if not passwd_home.is_dir() or passwd_home == Path("/"):
        pytest.skip(f"this user's home {passwd_home} is not a directory of its own")
    assert_refused(serve(None, str(passwd_home)), "is your home directory")


def test_missing_dir_is_refused(home):
    assert_refused(serve(home, str(home / "nope")), "not an existing directory")


def test_project_under_home_is_accepted(home):
    r = serve(home, str(home / "code" / "project"), str(home / "code"))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""


def test_no_allow_dir_starts(home):
    r = serve(home)
    assert r.returncode == 0, r.stderr
