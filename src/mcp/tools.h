// The tool implementations, one file per group; toolbox.cc dispatches to them.
#pragma once

#include <string>

#include "mcp/toolbox.h"

namespace abx::mcp::tools {

struct Call {
  Toolbox& box;
  const json& args;
  const CancelFlag& cancel;
};

// An optional argument (absent or null: `fallback`).
std::string string_arg(const json& args, const char* name, const std::string& fallback = {});
int int_arg(const json& args, const char* name, int fallback);
// The envd plane of the call's sandbox (`sandbox_id`, else the session sandbox).
Result<e2b::SandboxPlane> plane_for(Call& call);

// tools_sandbox.cc
ToolResult sandbox_create(Call& call);
ToolResult sandbox_list(Call& call);
ToolResult sandbox_info(Call& call);
ToolResult sandbox_set_timeout(Call& call);
ToolResult sandbox_kill(Call& call);
// tools_events.cc
ToolResult sandbox_events(Call& call);
// tools_exec.cc
ToolResult run_code(Call& call);
ToolResult run_command(Call& call);
// tools_files.cc
ToolResult file_write(Call& call);
ToolResult file_read(Call& call);
ToolResult file_list(Call& call);
ToolResult file_remove(Call& call);
// tools_transfer.cc
ToolResult upload(Call& call);
ToolResult download(Call& call);

}  // namespace abx::mcp::tools
