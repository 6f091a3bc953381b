// The MCP tools over the daemon's E2B API, shared by both transports (stdio
// and the daemon's /mcp). One Toolbox per MCP session: it owns the session
// sandbox that run_code / run_command use when no sandbox_id is given.
#pragma once

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "common/e2b_api.h"
#include "mcp/tool_result.h"

namespace abx::mcp {

// Set by the transport when the client cancels the call or goes away.
using CancelFlag = std::atomic<bool>;

struct ToolboxOptions {
  e2b::Endpoint endpoint;
  // upload/download touch only host paths under these (already canonical).
  // Empty: they are refused with `transfer_refusal`.
  std::vector<std::filesystem::path> allow_dirs;
  std::string transfer_refusal;
};

class Toolbox {
 public:
  explicit Toolbox(ToolboxOptions options);
  Toolbox(const Toolbox&) = delete;
  Toolbox& operator=(const Toolbox&) = delete;

  static bool has_tool(const std::string& name);
  // Never throws and never fails at the protocol level: a failure is a
  // result with is_error set.
  ToolResult call(const std::string& name, const json& arguments, const CancelFlag& cancel);
  // Kills the session sandbox, if one was made.
  void end_session();
  // The agent killed `id` itself: if it was the session sandbox, make a new one next time.
  void forget_sandbox(const std::string& id);

  const e2b::ControlPlane& control() const { return control_; }
  const ToolboxOptions& options() const { return options_; }
  // `sandbox_id` from the arguments, else the session sandbox (made now if needed).
  Result<std::string> sandbox_for(const json& arguments);

 private:
  ToolboxOptions options_;
  e2b::ControlPlane control_;
  std::mutex mutex_;
  std::string session_sandbox_;
};

}  // namespace abx::mcp
