// What a tool call hands back: text for the model, structuredContent for
// programs, and isError for a failure the agent should act on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace abx::mcp {

using nlohmann::json;

struct ToolResult {
  std::string text;
  json structured = json::object();
  bool is_error = false;
  json images = json::array();  // extra {"type":"image"} content (plots)

  static ToolResult failure(std::string message);
  // The CallToolResult JSON: content, structuredContent, isError.
  json to_json() const;
};

}  // namespace abx::mcp
