"""Shared pytest fixtures: a real `abx serve` daemon in a private data dir."""
from __future__ import annotations

import shutil

import pytest
from pathlib import Path

from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx


TEMPLATE_BUILD_TIMEOUT = 1800


@pytest.fixture(scope="session")
def daemon() -> Daemon:
    state = private_state_dir()
    d = start_daemon(state / "state")
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def prebuilt_templates(daemon: Daemon) -> None:
    """`base` (mmdebstrap, cached by spec hash in build/template-cache) and
    `code-interpreter-v1` (a layer over base) in the shared templates dir, built
    once before any test so that no create waits minutes for a first build."""
    for name in ("base", "code-interpreter-v1"):
        r = abx(daemon, "template", "build", name, timeout=TEMPLATE_BUILD_TIMEOUT)
        assert r.returncode == 0, f"building {name} failed:\n{r.stderr[-3000:]}"



@pytest.fixture
def state_dir() -> Path:
    """A fresh private dir for tests that run their own daemon."""
    path = private_state_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
