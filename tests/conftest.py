"""Shared pytest fixtures: a real `abx serve` daemon in a private data dir."""
from __future__ import annotations

import shutil

import pytest
from pathlib import Path

from harness import Daemon, private_state_dir, start_daemon, stop_daemon


@pytest.fixture(scope="session")
def daemon() -> Daemon:
    state = private_state_dir()
    d = start_daemon(state / "state")
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture
def state_dir() -> Path:
    """A fresh private dir for tests that run their own daemon."""
    path = private_state_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
