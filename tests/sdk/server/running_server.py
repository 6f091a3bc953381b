"""A real agent-sandbox-server on a free loopback port, in this process (no sandbox)."""
from __future__ import annotations

import threading
from typing import Any

import httpx
from agent_sandbox.server import make_server
from agent_sandbox.server.commands import Command, register_command


def hello(name: str = "world", times: int = 1) -> dict[str, Any]:
    """Greets someone"""
    return {"message": f"Hello, {name}!" * times}


def add(a: int, b: float) -> float:
    return a + b


def fail(reason: str = "kaput") -> None:
    raise ValueError(reason)


def not_json() -> object:
    return object()


def sample_commands() -> dict[str, Command]:
    registry: dict[str, Command] = {}
    register_command(hello, registry=registry)
    register_command(add, description="Adds two numbers", registry=registry)
    register_command(fail, registry=registry)
    register_command(not_json, registry=registry)
    return registry


class Running:
    def __init__(self, groups: Any = None) -> None:
        self.server = make_server(0, groups, "127.0.0.1", sample_commands())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def stop(self) -> None:
        self.http.close()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


