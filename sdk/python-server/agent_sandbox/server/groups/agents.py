"""`agents`: the server as seen by an AI agent. The registered commands as a tool manifest
(name, description, JSON-schema input: what OpenAI- and Anthropic-style tool calling takes)
and as a Model Context Protocol server over HTTP (JSON-RPC: initialize, tools/list,
tools/call), so an agent framework can use a template's commands without glue code."""

from __future__ import annotations

import json
from typing import Any

from .._version import __version__
from ..api import Call, Endpoint, row
from ..commands import json_result
from ..errors import HttpError
from ..schema import check_object

MCP_PROTOCOL = "2025-03-26"


def _tools(call: Call) -> list[dict[str, Any]]:
    return [{"name": entry.name, "description": entry.description,
             "inputSchema": entry.schema} for entry in call.app.commands.values()]


def tools(call: Call) -> dict[str, Any]:
    return {"tools": _tools(call)}


def mcp(call: Call) -> Any:
    message = call.args
    request_id = message.get("id")
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(request_id, -32600, "not a JSON-RPC 2.0 request (jsonrpc, method)")
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return _error(request_id, -32602, "params must be an object")
    if method == "initialize":
        return _result(request_id, {
            "protocolVersion": params.get("protocolVersion", MCP_PROTOCOL),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "agent-sandbox-server", "version": __version__}})
    if method.startswith("notifications/"):
        return {}
    if method == "ping":
        return _result(request_id, {})
    if method == "tools/list":
        return _result(request_id, {"tools": _tools(call)})
    if method == "tools/call":
        return _call_tool(call, request_id, params)
    return _error(request_id, -32601, f"unknown method {method!r}")


def _call_tool(call: Call, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    entry = call.app.commands.get(name) if isinstance(name, str) else None
    if entry is None:
        return _error(request_id, -32602, f"no tool {name!r}")
    arguments = params.get("arguments") or {}
    try:
        if not isinstance(arguments, dict):
            raise HttpError(400, "arguments must be an object", field="arguments")
        check_object(entry.schema, arguments)
        value = json_result(entry.name, entry.function(**arguments))
    except HttpError as error:
        return _error(request_id, -32602, error.message)
    except Exception as error:  # a tool's failure is a result the model should see
        return _result(request_id, {"isError": True, "content": [
            {"type": "text", "text": f"{type(error).__name__}: {error}"}]})
    return _result(request_id, {"isError": False, "structuredContent": {"result": value},
                                "content": [{"type": "text", "text": json.dumps(value)}]})


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


ROWS = [
    row("GET", "/agents/tools", "agents", tools,
        "The commands as an agent's tools: name, description, inputSchema"),
    # Any JSON-RPC message; the method decides what it carries.
    Endpoint("POST", "/agents/mcp", "agents", mcp, {"type": "object"},
             "Model Context Protocol over HTTP (JSON-RPC): initialize, tools/list, tools/call"),
]
