"""`commands`: list and call the functions registered with @command."""

from __future__ import annotations

from typing import Any

from ..api import Call, Endpoint, row
from ..commands import json_result
from ..errors import HttpError
from ..schema import check_object


def list_commands(call: Call) -> dict[str, Any]:
    return {"commands": [entry.describe() for entry in call.app.commands.values()]}


def run(call: Call) -> Any:
    name = call.path_args["name"]
    entry = call.app.commands.get(name)
    if entry is None:
        known = ", ".join(sorted(call.app.commands)) or "none registered"
        raise HttpError(404, f"no command {name!r} (commands: {known})", field="name")
    check_object(entry.schema, call.args)
    return {"result": json_result(name, entry.function(**call.args))}


ROWS = [
    row("GET", "/commands", "commands", list_commands,
        "The registered commands with their argument schemas"),
    # The body is the command's own arguments, checked against its schema in `run`.
    Endpoint("POST", "/commands/{name}", "commands", run, {"type": "object"},
             "Calls a command with a JSON object of its arguments; answers {\"result\": ...}"),
]
