// A template's start command (TemplateMeta::start_cmd, E2B's startCmd): run
// in the background when a sandbox is created, as the template's user in its
// workdir with the sandbox's env, a process of the sandbox (it dies with it)
// whose output goes to the sandbox's log. The create returns once the ready
// command (readyCmd) exits 0; without one, once the command has started.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
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

// Blocks (run it on a pool thread): starts the command in `live` and waits
// for it to be ready. The error is one line naming what went wrong and the
// command's last output; the caller kills the sandbox then.
Status start_and_wait_ready(LiveSandbox& live, const StartCommand& command,
                            boost::asio::any_io_executor executor);

}  // namespace abx::daemon
