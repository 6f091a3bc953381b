// The tools the MCP server offers, as tools/list returns them.
#pragma once

#include <nlohmann/json.hpp>

namespace abx::mcp {

// [{"name", "description", "inputSchema"}, ...]
const nlohmann::json& tool_definitions();

}  // namespace abx::mcp
