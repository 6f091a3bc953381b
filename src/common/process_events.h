// Reading envd's process events: the exit code a command ended with, and
// the output events in the shape our daemon writes them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace abx::e2b {

// {"event":{"data":{"<stream>":"<base64>"}}}: most of a command's stream,
// written and read without a JSON tree (megabytes a second go through).
std::string data_event(std::string_view stream, std::string_view bytes);
struct DataEvent {
  std::string_view stream;  // "stdout", "stderr" or "pty"
  std::string_view base64;
};
// A payload exactly as data_event writes it; anything else (another event,
// other spacing or order) is nullopt and is parsed as JSON instead.
std::optional<DataEvent> match_data_event(std::string_view payload);

// "signal: killed" / "signal: 9" (Go's os.ProcessState text) → 9.
std::optional<int> signal_from_status(std::string_view status);

// The shell's view of an `end` event: exitCode, or 128+signo when a signal
// ended the process.
int exit_code_from_end(const nlohmann::json& end);

}  // namespace abx::e2b
