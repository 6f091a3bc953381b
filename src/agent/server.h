// abx-init's service loop: accepts the runtime's connections (any number,
// one after another or at once), runs spawn/signal/open requests, and as PID 1
// reaps every child, writing each spawned process's wait status into its
// exit pipe. Never returns; init ends only when killed.
#pragma once

#include "agent/protocol.h"

namespace abx::agent {

// `tcp_listen_fd`: the listener of InitConfig::tcp_port, or -1.
[[noreturn]] void serve(int listen_fd, int signal_fd, const proto::InitConfig& config,
                        int tcp_listen_fd);

}  // namespace abx::agent
