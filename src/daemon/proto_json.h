// envd's messages in proto3 JSON as Connect's JSON codec writes them:
// lowerCamelCase, defaults omitted, int64 as strings, bytes as base64
// (spec/e2b-protocol.md §7.4).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "runtime/runtime.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon::proto_json {

std::string start_event(int pid);
std::string data_event(std::string_view stream_name, std::string_view bytes);  // stdout|stderr|pty
std::string end_event(const runtime::ExitInfo& exit, const std::string& error);
std::string keepalive_event();

nlohmann::json entry_info(const runtime::sandbox_fs::EntryInfo& entry);
// "-rw-r--r--" / "drwxr-xr-x" / "lrwxrwxrwx", as Go's fs.FileMode.String() prints.
std::string permissions_string(runtime::sandbox_fs::FileType type, uint32_t mode);

// A unary Connect error's body (codes come from daemon/error_map.h).
std::string error_body(const std::string& code, const std::string& message);

// Input field lookup that accepts both snake_case and lowerCamelCase names.
const nlohmann::json* field(const nlohmann::json& object, const char* camel, const char* snake);

}  // namespace abx::daemon::proto_json
