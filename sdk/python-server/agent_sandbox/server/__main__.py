"""`python -m agent_sandbox.server [--port 9000] [--commands commands.py] [--groups a,b]`."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

from . import app
from .app import GROUPS_ENV, parse_groups, start


def load_commands(path: str) -> dict[str, Any]:
    """Runs a commands.py so its @command functions register; a start() call in it does not
    serve but returns its arguments here."""
    if not os.path.isfile(path):
        raise SystemExit(f"--commands {path}: no such file")
    directory = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, directory)  # so it can import its neighbours
    spec = importlib.util.spec_from_file_location("commands", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--commands {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules["commands"] = module
    app._deferred = {}
    try:
        spec.loader.exec_module(module)
        return app._deferred
    finally:
        app._deferred = None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m agent_sandbox.server",
                                     description="The Agent Sandbox server SDK's HTTP service")
    parser.add_argument("--port", type=int, help="default: the commands.py's start(), else "
                        "$ABX_SERVER_PORT, else 9000")
    parser.add_argument("--host")
    parser.add_argument("--commands", help="a Python file whose @command functions to serve")
    parser.add_argument("--groups", help=f"comma-separated groups besides core (default "
                        f"${GROUPS_ENV}, else all)")
    args = parser.parse_args(argv)
    try:
        parse_groups(args.groups)  # refuse an unknown group before loading anything
    except ValueError as error:
        parser.error(str(error))
    wanted = load_commands(args.commands) if args.commands else {}
    port = args.port or wanted.get("port") or int(os.environ.get("ABX_SERVER_PORT", 9000))
    groups = args.groups if args.groups is not None else wanted.get("groups")
    start(port, groups, args.host or wanted.get("host") or "0.0.0.0")


if __name__ == "__main__":
    main()
