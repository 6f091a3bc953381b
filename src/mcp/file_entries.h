// Sandbox file entries (envd's EntryInfo) as the tools show them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/e2b_api.h"

namespace abx::mcp {

// {"name","path","type": "file"|"directory"|"symlink","size"}
nlohmann::json entry_summary(const nlohmann::json& entry_info);
// "d  4096  /home/user/src" style, one entry per line.
std::string entry_line(const nlohmann::json& summary);
// Succeeds when `path` is a regular file; else says what it is and which tool fits.
Status require_file(const e2b::SandboxPlane& plane, const std::string& path);

}  // namespace abx::mcp
