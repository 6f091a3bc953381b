// Which plane a request is for: a request naming a sandbox (headers, or a
// Host of the form {port}-{id}.{domain}) goes to that sandbox, the rest to
// the control plane (spec/e2b-protocol.md §2).
#pragma once

#include <optional>
#include <string>

#include "daemon/http_exchange.h"

namespace abx::daemon {

inline constexpr int kEnvdPort = 49983;
inline constexpr int kInterpreterPort = 49999;

struct SandboxTarget {
  std::string sandbox_id;
  int port = kEnvdPort;
};

std::optional<SandboxTarget> sandbox_target(const http::Request& request);

}  // namespace abx::daemon
