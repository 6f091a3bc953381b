// sandbox_create, sandbox_list, sandbox_info, sandbox_set_timeout, sandbox_kill.
#include "mcp/tools.h"

namespace abx::mcp::tools {
namespace {

constexpr int kDefaultTimeoutSeconds = 300;

// The fields an agent needs from the daemon's sandbox JSON, renamed to ours.
json sandbox_summary(const json& sandbox) {
  json out = {{"sandbox_id", sandbox.value("sandboxID", "")},
              {"template", sandbox.value("alias", sandbox.value("templateID", ""))}};
  for (const auto& [from, to] :
       {std::pair{"state", "state"}, std::pair{"startedAt", "started_at"},
        std::pair{"endAt", "end_at"}, std::pair{"cpuCount", "cpu_count"},
        std::pair{"memoryMB", "memory_mb"}, std::pair{"metadata", "metadata"}}) {
    if (sandbox.contains(from) && !sandbox[from].is_null()) out[to] = sandbox[from];
  }
  return out;
}

std::string describe(const json& summary) {
  std::string text =
      summary.value("sandbox_id", "") + " (template " + summary.value("template", "") + ")";
  if (summary.contains("end_at")) text += ", ends at " + summary["end_at"].get<std::string>();
  return text;
}

}  // namespace

std::string string_arg(const json& args, const char* name, const std::string& fallback) {
  const auto it = args.find(name);
  return it != args.end() && it->is_string() ? it->get<std::string>() : fallback;
}

int int_arg(const json& args, const char* name, int fallback) {
  const auto it = args.find(name);
  return it != args.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

Result<e2b::SandboxPlane> plane_for(Call& call) {
  auto id = call.box.sandbox_for(call.args);
  if (!id) return id.error();
  return e2b::SandboxPlane::open(call.box.control(), *id);
}

ToolResult sandbox_create(Call& call) {
  json request = {{"templateID", string_arg(call.args, "template", "base")},
                  {"timeout", int_arg(call.args, "timeout", kDefaultTimeoutSeconds)}};
  if (call.args.contains("envs")) request["envVars"] = call.args["envs"];
  if (call.args.contains("metadata")) request["metadata"] = call.args["metadata"];
  if (call.args.contains("allow_internet_access"))
    request["allow_internet_access"] = call.args["allow_internet_access"];
  auto created = call.box.control().create_sandbox(request);
  if (!created) return ToolResult::failure(created.error().message());
  ToolResult result;
  result.structured = sandbox_summary(*created);
  result.text = "Created sandbox " + describe(result.structured) + ". Pass sandbox_id \"" +
                result.structured.value("sandbox_id", "") +
                "\" to the other tools; kill it with sandbox_kill when done.";
  return result;
}

ToolResult sandbox_list(Call& call) {
  auto sandboxes = call.box.control().list_sandboxes();
  if (!sandboxes) return ToolResult::failure(sandboxes.error().message());
  ToolResult result;
  json summaries = json::array();
  for (const auto& sandbox : *sandboxes) summaries.push_back(sandbox_summary(sandbox));
  result.text = summaries.empty() ? "No sandboxes are running."
                                  : std::to_string(summaries.size()) + " sandbox(es) running:";
  for (const auto& summary : summaries) result.text += "\n- " + describe(summary);
  result.structured = {{"sandboxes", std::move(summaries)}};
  return result;
}

ToolResult sandbox_info(Call& call) {
  const std::string id = string_arg(call.args, "sandbox_id");
  auto sandbox = call.box.control().get_sandbox(id);
  if (!sandbox) {
    return ToolResult::failure(sandbox.error().message() +
                               "; sandbox_list shows the sandboxes that exist");
  }
  ToolResult result;
  result.structured = sandbox_summary(*sandbox);
  result.text = "Sandbox " + describe(result.structured) + "\n" + result.structured.dump(2);
  return result;
}

ToolResult sandbox_set_timeout(Call& call) {
  const std::string id = string_arg(call.args, "sandbox_id");
  const int seconds = int_arg(call.args, "timeout", kDefaultTimeoutSeconds);
  if (auto set = call.box.control().set_timeout(id, seconds); !set) {
    return ToolResult::failure(set.error().message());
  }
  ToolResult result;
  result.structured = {{"sandbox_id", id}, {"timeout", seconds}};
  result.text = "Sandbox " + id + " now lives " + std::to_string(seconds) + " more seconds.";
  return result;
}

ToolResult sandbox_kill(Call& call) {
  const std::string id = string_arg(call.args, "sandbox_id");
  if (auto killed = call.box.control().kill_sandbox(id); !killed) {
    return ToolResult::failure(killed.error().message() +
                               "; sandbox_list shows the sandboxes that exist");
  }
  call.box.forget_sandbox(id);
  ToolResult result;
  result.structured = {{"sandbox_id", id}, {"killed", true}};
  result.text = "Killed sandbox " + id + ".";
  return result;
}

}  // namespace abx::mcp::tools
