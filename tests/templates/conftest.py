"""A daemon of its own for the template tests (builds must not change `base` for other suites),
with the Debian base built once per machine: the rootfs tar is cached in build/template-cache,
keyed by the spec's hash."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness import Daemon, open_loopback_registries, private_state_dir, start_daemon, stop_daemon
from helpers import abx

REPO = Path(__file__).resolve().parents[2]
BASE_BUILD_TIMEOUT = 900


@pytest.fixture(scope="session")
def template_daemon() -> Daemon:
    state = private_state_dir("abx-tpl-")
    open_loopback_registries(state / "state")  # tests/templates/test_registry.py's
    d = start_daemon(state / "state", shared_templates=False)
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def built_base(template_daemon: Daemon) -> Daemon:
    r = abx(template_daemon, "template", "build", "base", timeout=BASE_BUILD_TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    return template_daemon
