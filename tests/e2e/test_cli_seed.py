"""The seed's CLI flow and the CLI's everyday commands, through the real binary."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import abx, create

REPO = Path(__file__).resolve().parents[2]
EXPECTED_TOTALS = ["shanghai   200", "hangzhou   165", "beijing    110"]


@pytest.fixture
def sandbox(daemon):
    sandbox_id = create(daemon)
    yield sandbox_id
    abx(daemon, "kill", sandbox_id, "--yes")


@pytest.mark.offline
def test_version_names_the_program(daemon):
    r = abx(daemon, "--version")
    assert r.returncode == 0
    assert r.stdout.startswith("abx ")


def test_seed_flow_prints_totals_and_downloads_the_output(daemon, tmp_path):
    sandbox_id = create(daemon)
    try:
        assert abx(daemon, "upload", sandbox_id, str(REPO / "examples/sales.csv"),
                   "/home/user/sales.csv").returncode == 0
        assert abx(daemon, "upload", sandbox_id, str(REPO / "examples/analyze.py"),
                   "/home/user/analyze.py").returncode == 0
        r = abx(daemon, "exec", sandbox_id, "--", "python", "/home/user/analyze.py")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == EXPECTED_TOTALS
        out = tmp_path / "out.txt"
        r = abx(daemon, "download", sandbox_id, "/home/user/out.txt", str(out))
        assert r.returncode == 0, r.stderr
        assert out.read_text().splitlines() == EXPECTED_TOTALS
        listing = abx(daemon, "list")
        assert sandbox_id in listing.stdout
    finally:
        r = abx(daemon, "kill", sandbox_id, "--yes")
    assert r.returncode == 0, r.stderr
    assert sandbox_id not in abx(daemon, "list").stdout


def test_exec_exit_code_is_the_commands(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--", "sh", "-c", "exit 3")
    assert r.returncode == 3


def test_exec_keeps_stdout_and_stderr_apart(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--", "sh", "-c", "echo out; echo err >&2")
    assert r.stdout == "out\n"
    assert r.stderr == "err\n"


def test_exec_forwards_piped_stdin(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--", "wc", "-l", input="a\nb\nc\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3"


def test_exec_env_cwd_and_user(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--env", "GREETING=hi there", "--cwd", "/tmp", "--",
            "sh", "-c", 'echo "$GREETING"; pwd; id -un')
    assert r.stdout.splitlines() == ["hi there", "/tmp", "user"]
    r = abx(daemon, "exec", sandbox, "--user", "root", "--", "id", "-u")
    assert r.stdout.strip() == "0"


def test_exec_runs_as_user_in_home_by_default(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--", "sh", "-c", "id -u; pwd; echo $HOME")
    assert r.stdout.splitlines() == ["1000", "/home/user", "/home/user"]


def test_exec_timeout_stops_the_remote_command(daemon, sandbox):
    r = abx(daemon, "exec", sandbox, "--timeout", "1", "--", "sleep", "30", timeout=20)
    assert r.returncode != 0
    ps = abx(daemon, "exec", sandbox, "--", "sh", "-c", "ps -eo comm | grep -c '^sleep$' || true")
    assert ps.stdout.strip() == "0"


def test_create_json_env_and_metadata(daemon):
    r = abx(daemon, "create", "--template", "base", "--json", "--env", "COLOR=blue",
            "--metadata", "owner=tests", "--timeout", "120")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    sandbox_id = info["sandboxID"]
    try:
        assert abx(daemon, "exec", sandbox_id, "--", "sh", "-c",
                   "echo $COLOR").stdout.strip() == "blue"
        listed = json.loads(abx(daemon, "list", "--json").stdout)
        mine = [s for s in listed if s["sandboxID"] == sandbox_id]
        assert mine and mine[0]["metadata"] == {"owner": "tests"}
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")


def test_directories_round_trip_with_r(daemon, sandbox, tmp_path):
    src = tmp_path / "project"
    (src / "pkg").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n")
    (src / "pkg" / "b.bin").write_bytes(bytes(range(256)) * 100)
    r = abx(daemon, "upload", "-r", sandbox, str(src), "/home/user/project")
    assert r.returncode == 0, r.stderr
    r = abx(daemon, "exec", sandbox, "--", "cat", "/home/user/project/a.txt")
    assert r.stdout == "alpha\n"
    back = tmp_path / "back"
    r = abx(daemon, "download", "-r", sandbox, "/home/user/project", str(back))
    assert r.returncode == 0, r.stderr
    assert (back / "a.txt").read_text() == "alpha\n"
    assert (back / "pkg" / "b.bin").read_bytes() == bytes(range(256)) * 100


def test_large_file_round_trip(daemon, sandbox, tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(251)) * (40 * 1024 * 4))  # ~40 MiB, not a multiple of chunk sizes
    assert abx(daemon, "upload", sandbox, str(big), "/home/user/big.bin").returncode == 0
    back = tmp_path / "back.bin"
    assert abx(daemon, "download", sandbox, "/home/user/big.bin", str(back)).returncode == 0
    assert back.read_bytes() == big.read_bytes()


def test_missing_local_path_is_a_one_line_error(daemon, sandbox):
    r = abx(daemon, "upload", sandbox, "./no/such/file.csv", "/home/user/x.csv")
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1
    assert "not found" in r.stderr


def test_missing_remote_path_is_a_one_line_error(daemon, sandbox, tmp_path):
    r = abx(daemon, "download", sandbox, "/home/user/nope.txt", str(tmp_path / "x"))
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1
    assert "not found" in r.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.offline
def test_unknown_sandbox_is_named(daemon):
    for args in (["exec", "izzzzzzzzzzzzzzzzzzzz", "--", "true"], ["kill", "izzzzzzzzzzzzzzzzzzzz", "--yes"]):
        r = abx(daemon, *args)
        assert r.returncode != 0
        assert "izzzzzzzzzzzzzzzzzzzz" in r.stderr and "not found" in r.stderr


def test_kill_from_a_script_goes_ahead_and_all_needs_yes(daemon, sandbox):
    """No terminal: a named kill proceeds (as docker rm does); every sandbox at once does not."""
    r = abx(daemon, "kill", "--all")
    assert r.returncode != 0 and "--yes" in r.stderr
    assert sandbox in abx(daemon, "list").stdout
    r = abx(daemon, "kill", sandbox)
    assert r.returncode == 0 and r.stdout == f"killed {sandbox}\n", r.stderr
    assert sandbox not in abx(daemon, "list").stdout


def test_kill_all(daemon):
    ids = [create(daemon) for _ in range(2)]
    r = abx(daemon, "kill", "--all", "--yes")
    assert r.returncode == 0, r.stderr
    listing = abx(daemon, "list").stdout
    assert not any(i in listing for i in ids)


@pytest.mark.offline
def test_wrong_key_is_rejected_with_a_hint(daemon):
    r = abx(daemon, "list", env={"ABX_SANDBOX_API_KEY": "e2b_" + "0" * 40})
    assert r.returncode != 0
    assert "key" in r.stderr.lower()


@pytest.mark.offline
def test_config_set_get_list_unset_and_env_wins(daemon):
    assert abx(daemon, "config", "set", "sandbox_api_key", "e2b_1234567890abcdef").returncode == 0
    env = {"ABX_SANDBOX_API_KEY": ""}
    r = abx(daemon, "config", "get", "sandbox_api_key", env=env)
    assert r.stdout.strip() == "e2b_1234567890abcdef"
    listing = abx(daemon, "config", "list").stdout
    assert "cdef" in listing and "1234567890ab" not in listing  # keys are masked
    config_file = daemon.data_dir / "config" / "config.toml"
    assert oct(config_file.stat().st_mode & 0o777) == "0o600"
    # the env var wins over the config file: the real key still works
    assert abx(daemon, "list").returncode == 0
    assert abx(daemon, "config", "unset", "sandbox_api_key").returncode == 0
    assert abx(daemon, "config", "get", "sandbox_api_key").returncode != 0
