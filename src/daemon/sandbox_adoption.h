// What a sandbox's init hands a daemon that adopted it (a restart): the
// commands and interpreter contexts an earlier daemon started, still running
// with their pipes kept by init (runtime::Sandbox::adopt_processes).
#pragma once

#include <memory>

#include "daemon/service.h"

namespace abx::daemon {

// Takes them over: commands into the sandbox's process table, contexts into
// its interpreter. Blocks briefly (one request to the sandbox's init); a
// failure is logged in the sandbox's log.
void adopt_running_processes(LiveSandbox& live);

// The sandbox's interpreter, made on first use.
std::shared_ptr<interp::Interpreter> interpreter_of(LiveSandbox& live);

}  // namespace abx::daemon
