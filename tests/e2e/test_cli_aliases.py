"""Issue 36 minor, the words Docker users type: `abx cp` (SRC DEST, one of them ID:PATH),
`abx inspect` (= info) and `abx images` (= template list), through the real `abx` against a
real daemon (`host` template, no build)."""
from __future__ import annotations

import json

import pytest
from helpers import abx

pytestmark = pytest.mark.offline


def test_cp_both_ways_and_a_clear_error_without_a_sandbox_side(daemon, tmp_path):
    sandbox_id = abx(daemon, "create", "host").stdout.strip()
    try:
        local = tmp_path / "in.txt"
        local.write_text("both ways\n")
        r = abx(daemon, "cp", str(local), f"{sandbox_id}:/tmp/")
        assert r.returncode == 0, r.stderr
        back = tmp_path / "back.txt"
        r = abx(daemon, "cp", f"{sandbox_id}:/tmp/in.txt", str(back))
        assert r.returncode == 0, r.stderr
        assert back.read_text() == "both ways\n"
        r = abx(daemon, "cp", str(local), str(back))
        assert r.returncode == 1 and "ID:PATH" in r.stderr, r.stderr
    finally:
        abx(daemon, "kill", "--yes", sandbox_id)


def test_inspect_is_info_and_images_is_template_list(daemon):
    sandbox_id = abx(daemon, "create", "host").stdout.strip()
    try:
        info = json.loads(abx(daemon, "inspect", sandbox_id, "--json").stdout)
        assert info["sandboxID"] == sandbox_id
    finally:
        abx(daemon, "kill", "--yes", sandbox_id)
    images = abx(daemon, "images", "--json")
    assert images.returncode == 0, images.stderr
    assert json.loads(images.stdout) == json.loads(abx(daemon, "template", "list", "--json").stdout)


def test_stop_pauses_or_kills_as_asked_and_asks_when_not_told(daemon):
    paused, killed = (abx(daemon, "create", "host").stdout.strip() for _ in range(2))
    try:
        r = abx(daemon, "stop", paused)  # no terminal, no flag: it cannot guess
        assert r.returncode == 1 and "--pause" in r.stderr and "--kill" in r.stderr, r.stderr
        r = abx(daemon, "stop", paused, "--pause")
        assert r.returncode == 0 and f"paused {paused}" in r.stdout, r.stderr
        assert json.loads(abx(daemon, "info", paused, "--json").stdout)["state"] == "paused"
        r = abx(daemon, "stop", killed, "--kill")
        assert r.returncode == 0 and f"killed {killed}" in r.stdout, r.stderr
        assert abx(daemon, "info", killed).returncode != 0
    finally:
        abx(daemon, "kill", "--yes", paused, killed)


def test_e2b_cli_shape_sandbox_subcommand(daemon):
    sandbox_id = abx(daemon, "sandbox", "create", "host").stdout.strip()
    try:
        assert sandbox_id in abx(daemon, "sandbox", "list", "-q").stdout.split()
    finally:
        r = abx(daemon, "sandbox", "kill", sandbox_id, "--yes")
        assert r.returncode == 0 and f"killed {sandbox_id}" in r.stdout, r.stderr


def test_a_mistyped_template_gets_a_did_you_mean(daemon):
    r = abx(daemon, "create", "hots")
    assert r.returncode == 1 and "did you mean host?" in r.stderr, r.stderr
