"""Honest failures: bad specs stop the build with the exit code and the last lines,
nothing half-built is listed, and interrupted builds leave no garbage."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from harness import private_state_dir, start_daemon, stop_daemon
from helpers import abx


@pytest.fixture
def broken_specs(tmp_path_factory) -> Path:
    specs = tmp_path_factory.mktemp("specs")
    (specs / "base").mkdir()
    (specs / "base" / "spec.toml").write_text('suite = "bookworm"\n')
    (specs / "broken").mkdir()
    (specs / "broken" / "spec.toml").write_text(
        'suite = "bookworm"\npackages = ["no-such-package-abx"]\n')
    return specs


@pytest.fixture
def spec_daemon(broken_specs, monkeypatch):
    monkeypatch.setenv("ABX_TEMPLATE_SPECS", str(broken_specs))
    state = private_state_dir("abx-tplf-")
    d = start_daemon(state / "state", shared_templates=False)
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.mark.offline
def test_unknown_template_is_named(template_daemon):
    r = abx(template_daemon, "template", "inspect", "nope")
    assert r.returncode != 0 and "nope" in r.stderr
    r = abx(template_daemon, "template", "build", "nope")
    assert r.returncode != 0 and "nope" in r.stderr
    r = abx(template_daemon, "template", "rm", "nope")
    assert r.returncode != 0 and "nope" in r.stderr


def test_failed_step_reports_exit_code_and_output_and_lists_nothing(spec_daemon):
    r = abx(spec_daemon, "template", "build", "broken", timeout=600)
    assert r.returncode != 0
    assert "exited with" in r.stderr
    assert "no-such-package-abx" in r.stderr
    listed = json.loads(abx(spec_daemon, "template", "list", "--json").stdout)
    assert "broken" not in {t["name"] for t in listed}
    leftovers = [p.name for p in (spec_daemon.data_dir / "templates").iterdir()
                 if p.name.startswith(".building")]
    assert leftovers == []


@pytest.mark.offline
def test_interrupted_build_leaves_no_garbage_after_restart(state_dir):
    data = state_dir / "state"
    half = data / "templates" / ".building-base"
    (half / "rootfs" / "usr").mkdir(parents=True)
    # A RUN step's writable layer and an uploaded build context, both cut short.
    step = data / "templates" / ".layers" / ".staging-s-0123"
    (step / "upper" / "etc").mkdir(parents=True)
    upload = data / "templates" / ".building-upload-0123"
    upload.mkdir()
    (upload / "upload.tar").write_bytes(b"partial")
    os.chmod(data, 0o755)
    d = start_daemon(data, shared_templates=False)
    try:
        assert not half.exists() and not step.exists() and not upload.exists()
        listed = json.loads(abx(d, "template", "list", "--json").stdout)
        assert all(t["name"] != ".building-base" for t in listed)
    finally:
        stop_daemon(d)


def test_step_timeout_stops_a_long_run_with_a_clear_error(built_base, tmp_path):
    """`--step-timeout 3`: a RUN that would run for ten minutes is stopped, the build fails
    naming the step, the limit and how to raise it, with the step's last output; nothing is
    listed under the name and the step's process is gone."""
    context = tmp_path / "slow"
    context.mkdir()
    (context / "Sandboxfile").write_text("FROM base\nRUN echo step-has-begun && sleep 607\n")
    r = abx(built_base, "template", "build", str(context), "--name", "slow-step",
            "--step-timeout", "3", timeout=600)
    assert r.returncode != 0
    assert "Sandboxfile line 2" in r.stderr and "sleep 607" in r.stderr, r.stderr
    assert "ran longer than 3 s and was stopped" in r.stderr, r.stderr
    assert "--step-timeout" in r.stderr and "step-has-begun" in r.stderr, r.stderr
    listed = json.loads(abx(built_base, "template", "list", "--json").stdout)
    assert "slow-step" not in {t["name"] for t in listed}
    sleeping = [p for p in os.listdir("/proc") if p.isdigit()
                and _cmdline(p) == b"sleep\x00607\x00"]
    assert sleeping == [], "the stopped step's process still runs"


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
