// Reaching servers that listen inside a sandbox's own network namespace.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime {

// A blocking TCP socket connected to 127.0.0.1:`port` inside the sandbox.
// ECONNREFUSED when nothing listens there.
Result<UniqueFd> connect_tcp(const Sandbox& sb, uint16_t port);

}  // namespace abx::runtime
