// The containment recipe abx-init runs as PID 1, one step per line.
#pragma once

#include "common/error.h"
#include "runtime/init_protocol.h"

namespace abx::runtime::init {

// Returns the first failing step's error; the sandbox is unusable then.
Status contain(const proto::InitConfig& config);

}  // namespace abx::runtime::init
