// The containment recipe abx-init runs as PID 1, one step per line.
#pragma once

#include "agent/protocol.h"
#include "common/error.h"

namespace abx::agent {

// Returns the first failing step's error; the sandbox is unusable then.
Status contain(const proto::InitConfig& config);

}  // namespace abx::agent
