"""Starting the local daemon when none answers, the way the `abx` CLI would."""

from __future__ import annotations

import os
import shutil
import subprocess

from .errors import SandboxException

START_TIMEOUT = 60.0
HEALTH_WAIT = 20.0

healthy_urls: set[str] = set()
"""Daemon URLs seen answering /health in this process: checked once, not per sandbox."""


def find_abx() -> str | None:
    """$ABX_BIN, else `abx` on PATH."""
    explicit = os.environ.get("ABX_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("abx")


def start_daemon() -> None:
    """Runs `abx daemon start`; raises with its output if that fails."""
    abx = find_abx()
    if abx is None:
        raise SandboxException(
            "no Agent Sandbox daemon is running and the `abx` binary was not found: install abx "
            "(see the project README) and run `abx daemon start`, set ABX_BIN=/path/to/abx, or "
            "pass api_url= / ABX_SANDBOX_API_URL for a daemon elsewhere")
    try:
        done = subprocess.run([abx, "daemon", "start"], capture_output=True, text=True,
                              timeout=START_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxException(f"`{abx} daemon start` failed: {error}") from error
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise SandboxException(f"`{abx} daemon start` exited with {done.returncode}: {output}")


def not_answering(url: str) -> SandboxException:
    """The error when a started daemon still does not answer."""
    return SandboxException(f"the local daemon at {url or '(no address)'} does not answer GET "
                            "/health; check `abx daemon status` and its log")


def explicit_url_dead(url: str) -> SandboxException:
    """The error when the daemon URL the user gave (api_url=, ABX_SANDBOX_API_URL or the config
    file's sandbox_api_url) does not answer: the local daemon is only started for the default."""
    return SandboxException(
        f"no Agent Sandbox daemon answers at {url} (given by api_url=, ABX_SANDBOX_API_URL or "
        "the config file's sandbox_api_url): start the daemon there, fix the URL, or leave it "
        "unset to use (and start) the local daemon")
