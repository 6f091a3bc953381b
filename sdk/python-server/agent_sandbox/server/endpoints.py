"""ENDPOINTS: every endpoint of the server, one row each (method, path, group, handler,
argument schema, description). The server routes by this table and GET / publishes it."""

from __future__ import annotations

from .api import GROUPS, Endpoint
from .groups import agents, browser, commands, core, dev_tools, file_ops, process, system, terminal

ENDPOINTS: list[Endpoint] = [
    *core.ROWS, *commands.ROWS, *file_ops.ROWS, *process.ROWS, *terminal.ROWS, *system.ROWS,
    *dev_tools.ROWS, *browser.ROWS, *agents.ROWS,
]

__all__ = ["ENDPOINTS", "GROUPS", "Endpoint"]
