#include "mcp/toolbox.h"

#include <map>

#include "mcp/arguments.h"
#include "mcp/tool_schemas.h"
#include "mcp/tools.h"

namespace abx::mcp {
namespace {

using ToolFn = ToolResult (*)(tools::Call&);

const std::map<std::string, ToolFn>& tool_table() {
  static const std::map<std::string, ToolFn> table = {
      {"sandbox_create", tools::sandbox_create},
      {"sandbox_list", tools::sandbox_list},
      {"sandbox_info", tools::sandbox_info},
      {"sandbox_set_timeout", tools::sandbox_set_timeout},
      {"sandbox_kill", tools::sandbox_kill},
      {"sandbox_events", tools::sandbox_events},
      {"run_code", tools::run_code},
      {"run_command", tools::run_command},
      {"file_write", tools::file_write},
      {"file_read", tools::file_read},
      {"file_list", tools::file_list},
      {"file_remove", tools::file_remove},
      {"upload", tools::upload},
      {"download", tools::download},
  };
  return table;
}

const json& schema_of(const std::string& name) {
  for (const auto& tool : tool_definitions()) {
    if (tool["name"] == name) return tool["inputSchema"];
  }
  static const json none = json::object();
  return none;
}

// Agents often send null for an optional argument they do not use.
json without_nulls(const json& arguments) {
  if (!arguments.is_object()) return arguments;
  json out = json::object();
  for (const auto& [key, value] : arguments.items()) {
    if (!value.is_null()) out[key] = value;
  }
  return out;
}

// Long enough for an agent's session; the daemon's TTL reclaims it if the
// session dies without saying goodbye.
constexpr int kSessionSandboxSeconds = 3600;

}  // namespace

Toolbox::Toolbox(ToolboxOptions options)
    : options_(std::move(options)), control_(options_.endpoint) {}

bool Toolbox::has_tool(const std::string& name) { return tool_table().contains(name); }

ToolResult Toolbox::call(const std::string& name, const json& arguments, const CancelFlag& cancel) {
  const json args = without_nulls(arguments.is_null() ? json::object() : arguments);
  if (auto bad = check_arguments(schema_of(name), args)) {
    return ToolResult::failure(name + ": " + *bad);
  }
  tools::Call call{*this, args, cancel};
  try {
    return tool_table().at(name)(call);
  } catch (const std::exception& error) {  // e.g. a daemon answer of an unexpected shape
    return ToolResult::failure(name + " failed: " + error.what());
  }
}

Result<std::string> Toolbox::sandbox_for(const json& arguments) {
  if (auto id = tools::string_arg(arguments, "sandbox_id"); !id.empty()) return id;
  std::lock_guard lock(mutex_);
  if (!session_sandbox_.empty()) return session_sandbox_;
  const json request = {{"templateID", "base"},
                        {"timeout", kSessionSandboxSeconds},
                        {"metadata", {{"created_by", "abx-mcp-session"}}}};
  auto created = control_.create_sandbox(request);
  if (!created) return created.error();
  session_sandbox_ = created->value("sandboxID", "");
  return session_sandbox_;
}

void Toolbox::end_session() {
  std::string id;
  {
    std::lock_guard lock(mutex_);
    id = std::exchange(session_sandbox_, {});
  }
  if (!id.empty()) (void)control_.kill_sandbox(id);  // already gone is fine
}

void Toolbox::forget_sandbox(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (session_sandbox_ == id) session_sandbox_.clear();
}

}  // namespace abx::mcp
