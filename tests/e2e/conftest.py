"""Fixtures of the e2e tests beyond the session's (tests/conftest.py)."""
from __future__ import annotations

import pytest
from durable_helpers import e2b_env, start_in_band
from harness import start_daemon, stop_daemon


@pytest.fixture
def own_daemon(state_dir, monkeypatch):
    """A daemon of the test's own, {"d": Daemon}, which the test may restart."""
    holder = {"d": start_daemon(state_dir / "state", extra_args=("--warm-pool", "0"))}
    e2b_env(monkeypatch, holder["d"])
    yield holder
    d = holder["d"]
    if d.proc.poll() is not None:  # a test ended while no daemon ran: one more kills its sandboxes
        d = start_daemon(d.data_dir, extra_args=("--warm-pool", "0"))
    stop_daemon(d)


@pytest.fixture
def e2b(daemon, monkeypatch):
    """The session daemon as the E2B SDK's server, volume content included."""
    e2b_env(monkeypatch, daemon)
    monkeypatch.setenv("E2B_VOLUME_API_URL", daemon.url)
    return daemon


@pytest.fixture
def in_band(state_dir, monkeypatch):
    """An in-band daemon (durable_helpers.start_in_band) in {"d": ...}: a test that restarts it
    puts the new one there; stopped at the end (started again first if a test left it dead)."""
    holder = {"d": start_in_band(state_dir / "state", monkeypatch)}
    yield holder
    d = holder["d"]
    if d.proc.poll() is not None:
        d = start_daemon(d.data_dir, extra_args=("--warm-pool", "0"))
    stop_daemon(d)
