#include "mcp/tool_result.h"

namespace abx::mcp {

ToolResult ToolResult::failure(std::string message) {
  ToolResult result;
  result.structured = {{"error", message}};
  result.text = std::move(message);
  result.is_error = true;
  return result;
}

json ToolResult::to_json() const {
  json content = json::array({{{"type", "text"}, {"text", text}}});
  for (const auto& image : images) content.push_back(image);
  return {
      {"content", std::move(content)}, {"structuredContent", structured}, {"isError", is_error}};
}

}  // namespace abx::mcp
