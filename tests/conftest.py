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
    # The suites run 50 default sandboxes (512 MB limits each) at once, more than a
    # small CI host's memory: let limits overcommit here (they are caps, not use).
    # Volume mounts are on by default where volumes are loop-mounted images; the switch also
    # mounts plain-directory volumes (a daemon that cannot loop-mount), so the volume tests run there.
    (state / "config.json").write_text('{"hostCaps": {"memoryPercent": 1000}, '
                                       '"volumes": {"mounts": true}}')
    d = start_daemon(state / "state", extra_args=("--config", str(state / "config.json")))
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def prebuilt_templates(daemon: Daemon) -> None:
    """`base` (mmdebstrap, cached by spec hash in build/template-cache) and
    `code-interpreter-v1` (a layer over base) in the shared templates dir, built
    once before the first test that needs them so that no create waits minutes for
    a first build."""
    for name in ("base", "code-interpreter-v1"):
        r = abx(daemon, "template", "build", name, timeout=TEMPLATE_BUILD_TIMEOUT)
        assert r.returncode == 0, f"building {name} failed:\n{r.stderr[-3000:]}"


def needs_shared_templates(item: pytest.Item) -> bool:
    """A test that uses the session daemon (or is marked `needs_template`) needs the
    shared templates unless it is marked `offline`: offline tests (the quick tier,
    `make check`) never wait for a template build. The template suite's own daemon
    builds what it needs itself."""
    if item.get_closest_marker("offline"):
        return False
    uses_daemon = "daemon" in getattr(item, "fixturenames", ())
    return uses_daemon or item.get_closest_marker("needs_template") is not None


@pytest.hookimpl(trylast=True)  # after -k and -m deselected what will not run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test that needs the shared templates builds them in its setup: it gets
    the build's time on top of the usual per-test timeout."""
    first = next((item for item in items if needs_shared_templates(item)), None)
    if first is not None:  # prepended: it wins over the test's own timeout marker
        first.add_marker(pytest.mark.timeout(2 * TEMPLATE_BUILD_TIMEOUT + 300), append=False)


@pytest.fixture(autouse=True)
def templates_when_needed(request: pytest.FixtureRequest) -> None:
    if needs_shared_templates(request.node):
        request.getfixturevalue("prebuilt_templates")



@pytest.fixture
def state_dir() -> Path:
    """A fresh private dir for tests that run their own daemon."""
    path = private_state_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
