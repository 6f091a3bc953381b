// The E2B NDJSON lines this side of the interpreter writes itself (drivers
// write the rest): output the drivers did not frame, keepalives, and errors
// about the context process.
#pragma once

#include <string>

namespace abx::interp::events {

std::string timestamp_now();  // ISO 8601, UTC, microseconds: 2024-05-01T10:00:00.123456Z
std::string output(const std::string& type, const std::string& text);  // "stdout"/"stderr"
std::string error(const std::string& name, const std::string& value, const std::string& traceback);
std::string keepalive();
std::string end_of_execution();

}  // namespace abx::interp::events
