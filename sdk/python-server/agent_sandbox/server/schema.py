"""JSON schemas of endpoint arguments: made from a function's signature, and checked.

Only the part of JSON Schema that signatures produce: `type` (one or a list), `items`,
`properties`, `required`, `additionalProperties`, `enum`, `default`, `description`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from typing import Any, Callable, Union

from .errors import bad_input

Schema = dict[str, Any]

_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean",
           list: "array", dict: "object", tuple: "array", type(None): "null"}


def obj(properties: Mapping[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    """An object schema without extra keys (so a misspelled argument is an error)."""
    return {"type": "object", "properties": dict(properties), "required": list(required),
            "additionalProperties": False}


def type_schema(annotation: Any) -> Schema:
    """The schema of one Python annotation; {} (anything) for what it cannot express."""
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        parts = [type_schema(arg) for arg in args]
        if all(set(part) == {"type"} and isinstance(part["type"], str) for part in parts):
            return {"type": [part["type"] for part in parts]}
        return {}
    if origin in (list, tuple, set, frozenset) or origin is typing.Sequence:
        schema: Schema = {"type": "array"}
        if args and args[-1] is not Ellipsis and origin is list:
            schema["items"] = type_schema(args[0])
        return schema
    if origin in (dict, typing.Mapping) or origin is Mapping:
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(args)}
    return {}


def from_signature(function: Callable[..., Any]) -> Schema:
    """The arguments' schema: a parameter with a default is optional, *args/**kwargs refused."""
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # an annotation that does not resolve: its parameter takes anything
        hints = {}
    properties: dict[str, Schema] = {}
    required: list[str] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD,
                              parameter.POSITIONAL_ONLY):
            raise TypeError(f"{function.__name__}: parameter {name!r} must be a plain or "
                            "keyword argument (a command is called with named JSON arguments)")
        schema = type_schema(hints.get(name, Any))
        if parameter.default is parameter.empty:
            required.append(name)
        else:
            schema["default"] = parameter.default
        properties[name] = schema
    return obj(properties, tuple(required))


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _matches(value: Any, wanted: str) -> bool:
    found = _type_name(value)
    return found == wanted or (wanted == "number" and found == "integer")


def check(schema: Schema, value: Any, field: str) -> None:
    """Raises a 400 naming `field` (a dotted path) where `value` does not fit `schema`."""
    wanted = schema.get("type")
    if wanted is not None:
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_matches(value, option) for option in options):
            raise bad_input(field, f"expected {' or '.join(options)}, got {_type_name(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise bad_input(field, f"must be one of {schema['enum']}, got {value!r}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            check(schema["items"], item, f"{field}[{index}]")
    if isinstance(value, dict) and "properties" in schema:
        check_object(schema, value, field + ".")


def check_object(schema: Schema, args: Mapping[str, Any], prefix: str = "") -> None:
    """Checks a JSON object of arguments: required keys, unknown keys, each value's type."""
    properties: Mapping[str, Schema] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in args:
            raise bad_input(prefix + name, "required argument missing")
    for name, value in args.items():
        if name not in properties:
            if schema.get("additionalProperties", True) is False:
                known = ", ".join(sorted(properties)) or "none"
                raise bad_input(prefix + name, f"unknown argument (known: {known})")
            continue
        check(properties[name], value, prefix + name)


def from_query(schema: Schema, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """Arguments of a GET from its query string, converted to the schema's scalar types."""
    properties: Mapping[str, Schema] = schema.get("properties", {})
    args: dict[str, Any] = {}
    for name, values in query.items():
        raw = values[-1]
        wanted = properties.get(name, {}).get("type")
        options = wanted if isinstance(wanted, list) else [wanted]
        args[name] = _convert(raw, options, name)
    return args


def _convert(raw: str, options: list[Any], name: str) -> Any:
    if "string" in options or None in options:
        return raw
    if "boolean" in options:
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise bad_input(name, f"expected true or false, got {raw!r}")
    if "integer" in options or "number" in options:
        try:
            return int(raw)
        except ValueError:
            pass
        if "number" in options:
            try:
                return float(raw)
            except ValueError:
                pass
        raise bad_input(name, f"expected a number, got {raw!r}")
    return raw
