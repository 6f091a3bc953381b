// The local runtime's OutputFollower: a control-socket connection of its
// own to the sandbox's agent, on which one waiting kRead at a time is sent
// and its answer taken without blocking (the daemon's event loop waits for
// the fd).
#pragma once

#include <memory>

#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime {

// `connection`: connected to the agent's control socket.
std::unique_ptr<OutputFollower> make_control_follower(UniqueFd connection, int pid);

}  // namespace abx::runtime
