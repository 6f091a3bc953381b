// `abx mcp serve`: MCP over stdio, one JSON-RPC message per line.
#pragma once

#include "mcp/toolbox.h"

namespace abx::mcp {

// Serves until stdin ends, then ends the session (its sandbox is killed).
// Returns the process exit code.
int serve_stdio(ToolboxOptions options);

// JSON text for the wire: invalid UTF-8 from a sandbox is replaced, not fatal.
std::string wire_text(const json& message);

}  // namespace abx::mcp
