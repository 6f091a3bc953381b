// A template's start command (TemplateMeta::start_cmd, E2B's startCmd): run
// in the background when a sandbox is created, as the template's user in its
// workdir with the sandbox's env, a process of the sandbox (it dies with it)
// whose output goes to the sandbox's log. The create returns once the ready
// command (readyCmd) exits 0; without one, once the command has started.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/error.h"
#include "daemon/service.h"

namespace abx::daemon {

// How long a create waits for a start command to be ready, unless
// ABX_READY_TIMEOUT_S (the daemon's environment) says otherwise.
inline constexpr std::chrono::seconds kDefaultReadyTimeout{60};
std::chrono::seconds ready_timeout();

struct StartCommand {
  std::string template_id;  // for the error
  std::string start_cmd;    // run by /bin/sh -c
  std::string ready_cmd;    // run by /bin/sh -c until it exits 0; "" = none
  std::chrono::seconds timeout = kDefaultReadyTimeout;
};

// Starts the command in `live` and waits for it to be ready: between
// checks no thread is held, and each check runs on the pool's long lane (at
// most 10 s). The error is one line naming what went wrong and the command's
// last output; the caller kills the sandbox then.
http::Task<Status> start_and_wait_ready(std::shared_ptr<LiveSandbox> live, StartCommand command,
                                        BlockingPool& pool);

}  // namespace abx::daemon
