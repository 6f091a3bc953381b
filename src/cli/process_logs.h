// abx logs ID PID: one command's output, read from the sandbox's agent
// (GET /abx/v1/sandboxes/{id}/processes/{pid}/output), so it is there from
// its first byte also after a daemon restart or once the command ended.
#pragma once

#include <string>

#include "cli/api.h"

namespace abx::cli {

// Prints what the sandbox keeps of command `pid`'s output (stdout and stderr
// to ours, as they came) and returns 0; with `follow`, then its new output
// until it ends, and returns its exit code as `abx exec` would.
Result<int> show_process_output(const Endpoint& endpoint, const std::string& id, int pid,
                                bool follow);

}  // namespace abx::cli
