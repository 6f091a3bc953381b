// The daemon (`abx serve`): control plane + sandbox plane on one HTTP/1.1
// address, E2B's wire protocol, state in SQLite so it survives restarts.
#pragma once

#include "daemon/serve_options.h"

namespace abx::daemon {

// Runs until SIGINT/SIGTERM. Returns the process exit code.
int serve(const ServeOptions& options);

}  // namespace abx::daemon
