// Why a sandbox ended under a command the CLI was showing (abx exec, abx logs
// ID PID -f), for the one line that tells the user instead of a broken
// connection.
#pragma once

#include <optional>
#include <string>

#include "cli/api.h"

namespace abx::cli {

// After a command's stream broke: nothing while the sandbox still runs, else
// why it ended as its log's last line says ("stopped: its init was killed
// (signal: killed)", "killed", "timeout reached: killed"; empty when that is
// not known). A sandbox whose agent died is dropped by the daemon a moment
// after its streams break, so this waits a few seconds for the daemon to agree.
std::optional<std::string> sandbox_end_reason(const Endpoint& endpoint, const std::string& id);

// "sandbox ID ended while the command ran: REASON", REASON saying what to do
// when it is not known.
std::string sandbox_ended_message(const std::string& id, const std::string& reason);

}  // namespace abx::cli
