"""`@command`: the user's own endpoints, POST /commands/{name} with JSON arguments."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, TypeVar, overload

from .schema import Schema, from_signature

F = TypeVar("F", bound=Callable[..., Any])
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Command:
    """A registered function, its arguments' schema and its description."""

    name: str
    function: Callable[..., Any]
    schema: Schema
    description: str

    def describe(self) -> dict[str, Any]:
        """The command as JSON, for GET / and GET /commands."""
        return {"name": self.name, "description": self.description,
                "path": f"/commands/{self.name}", "schema": self.schema}


REGISTRY: dict[str, Command] = {}
"""Commands registered in this process, by name (what `start()` serves)."""


@overload
def command(function: F, /) -> F: ...


@overload
def command(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...


def command(function: Callable[..., Any] | None = None, /, *, name: str | None = None,
            description: str | None = None) -> Any:
    """Registers a function as POST /commands/{name}; its signature is the arguments' schema.

        @command(description="Greets someone")
        def hello(name: str = "world") -> dict:
            return {"message": f"Hello, {name}!"}

    The result must be JSON-serializable (checked when the command is called).
    """
    def register(target: F) -> F:
        register_command(target, name=name, description=description)
        return target

    return register if function is None else register(function)


def register_command(function: Callable[..., Any], name: str | None = None,
                     description: str | None = None,
                     registry: dict[str, Command] | None = None) -> Command:
    """Adds `function` to `registry` (default: the process's REGISTRY) and returns its entry."""
    name = name or function.__name__
    if not _NAME.match(name):
        raise ValueError(f"command name {name!r}: use letters, digits, _ . - (at most 64)")
    doc = (function.__doc__ or "").strip().splitlines()
    entry = Command(name, function, from_signature(function),
                    description if description is not None else (doc[0] if doc else ""))
    (REGISTRY if registry is None else registry)[name] = entry
    return entry


def json_result(name: str, value: Any) -> Any:
    """`value` if JSON can carry it; else a TypeError saying which command returned what."""
    try:
        json.dumps(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"command {name!r} returned a value JSON cannot carry ({error})") from None
    return value
