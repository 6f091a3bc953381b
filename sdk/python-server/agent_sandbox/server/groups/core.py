"""`core`: health, version and what this server offers; always on."""

from __future__ import annotations

import os
import platform
import socket
import time
from typing import Any

from .._version import __version__
from ..api import GROUPS, Call, row


def health(call: Call) -> dict[str, Any]:
    return {"status": "ok"}


def info(call: Call) -> dict[str, Any]:
    return {"name": "agent-sandbox-server", "version": __version__,
            "hostname": socket.gethostname(), "pid": os.getpid(),
            "python": platform.python_version(), "cwd": os.getcwd(),
            "uptime_seconds": round(time.monotonic() - call.app.started, 3),
            "groups": call.app.enabled_groups()}


def capabilities(call: Call) -> dict[str, Any]:
    app = call.app
    return {"groups": app.enabled_groups(),
            "disabled": [name for name in GROUPS if name not in app.groups],
            "commands": sorted(app.commands) if "commands" in app.groups else []}


def describe(call: Call) -> dict[str, Any]:
    return call.app.describe()


ROWS = [
    row("GET", "/", "core", describe,
        "This server: its groups, endpoints and commands with their argument schemas"),
    row("GET", "/health", "core", health, "Liveness: {\"status\": \"ok\"}"),
    row("GET", "/info", "core", info, "Version, host name, pid, Python, uptime, enabled groups"),
    row("GET", "/capabilities", "core", capabilities,
        "Enabled and disabled groups and the command names"),
]
