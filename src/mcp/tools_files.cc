// file_write, file_read, file_list, file_remove: the sandbox's files through
// the envd plane (/files and filesystem.Filesystem).
#include "mcp/file_entries.h"
#include "mcp/stream_reader.h"
#include "mcp/text_limits.h"
#include "mcp/tools.h"

namespace abx::mcp::tools {
namespace {

// Bigger files are for download, not for a model's context.
constexpr size_t kMaxReadBytes = 8u << 20;

Result<std::string> read_file(const e2b::SandboxPlane& plane, const std::string& path,
                              const CancelFlag& cancel) {
  auto stream = plane.download(path);
  if (!stream) return stream.error();
  std::string content;
  while (!(*stream)->done()) {
    auto bytes = read_unless_cancelled(**stream, cancel);
    if (!bytes) return bytes.error();
    content += *bytes;
    if (content.size() > kMaxReadBytes) {
      return Error{path + " is larger than " + std::to_string(kMaxReadBytes >> 20) +
                   " MiB; use download, or run_command with head/tail/grep to read parts"};
    }
  }
  return content;
}

}  // namespace

ToolResult file_write(Call& call) {
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string path = string_arg(call.args, "path");
  std::string content = string_arg(call.args, "content");
  const size_t size = content.size();
  const http::BodySource once = [&content]() -> Result<std::string> {
    return std::exchange(content, {});
  };
  if (auto written = plane->upload(path, once); !written) {
    return ToolResult::failure(written.error().message());
  }
  ToolResult result;
  result.structured = {{"sandbox_id", plane->id()}, {"path", path}, {"bytes", size}};
  result.text = "Wrote " + std::to_string(size) + " bytes to " + path + ".";
  return result;
}

ToolResult file_read(Call& call) {
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string path = string_arg(call.args, "path");
  if (auto kind = require_file(*plane, path); !kind)
    return ToolResult::failure(kind.error().message());
  auto content = read_file(*plane, path, call.cancel);
  if (!content) return ToolResult::failure(content.error().message());
  if (looks_binary(*content)) {
    return ToolResult::failure(path + " is a binary file (" + std::to_string(content->size()) +
                               " bytes), not text; use the download tool to copy it to the host");
  }
  ToolResult result;
  result.text = clip(*content);
  result.structured = {{"sandbox_id", plane->id()},
                       {"path", path},
                       {"bytes", content->size()},
                       {"truncated", result.text.size() != content->size()},
                       {"content", result.text}};
  return result;
}

ToolResult file_list(Call& call) {
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string path = string_arg(call.args, "path", "/home/user");
  auto listed = plane->rpc("filesystem.Filesystem/ListDir",
                           {{"path", path}, {"depth", int_arg(call.args, "depth", 1)}});
  if (!listed) return ToolResult::failure(listed.error().message());
  json entries = json::array();
  for (const auto& entry : listed->value("entries", json::array())) {
    entries.push_back(entry_summary(entry));
  }
  ToolResult result;
  result.text = entries.empty() ? path + " is empty." : path + ":";
  for (const auto& entry : entries) result.text += "\n" + entry_line(entry);
  result.text = clip(result.text);
  result.structured = {{"sandbox_id", plane->id()}, {"path", path}, {"entries", entries}};
  return result;
}

ToolResult file_remove(Call& call) {
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string path = string_arg(call.args, "path");
  if (auto removed = plane->rpc("filesystem.Filesystem/Remove", {{"path", path}}); !removed) {
    return ToolResult::failure(removed.error().message());
  }
  ToolResult result;
  result.structured = {{"sandbox_id", plane->id()}, {"path", path}, {"removed", true}};
  result.text = "Removed " + path + ".";
  return result;
}

}  // namespace abx::mcp::tools
