"""Agent Sandbox server SDK: the HTTP service inside a sandbox (default port 9000).

    from agent_sandbox.server import command, start

    @command(description="Greets someone")
    def hello(name: str = "world") -> dict:
        return {"message": f"Hello, {name}!"}

    start(9000)

Every endpoint is a row of `agent_sandbox.server.endpoints.ENDPOINTS`; capability groups
(`core` always, then commands, file_ops, process, terminal, system, dev_tools, browser,
agents) are switched on with `start(groups=[...])` or $ABX_SERVER_GROUPS.
"""

from ._version import __version__
from .api import GROUPS, Endpoint
from .app import App, Server, make_server, start
from .commands import REGISTRY, Command, command
from .errors import HttpError

__all__ = ["GROUPS", "REGISTRY", "App", "Command", "Endpoint", "HttpError", "Server",
           "__version__", "command", "make_server", "start"]
