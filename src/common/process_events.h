// Reading envd's process events: the exit code a command ended with.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace abx::e2b {

// "signal: killed" / "signal: 9" (Go's os.ProcessState text) → 9.
std::optional<int> signal_from_status(std::string_view status);

// The shell's view of an `end` event: exitCode, or 128+signo when a signal
// ended the process.
int exit_code_from_end(const nlohmann::json& end);

}  // namespace abx::e2b
