// Capabilities of the user's processes: uid 1000 ends with none (setresuid
// clears them); root keeps only Docker's default set.
#pragma once

#include "common/error.h"

namespace abx::runtime::init::caps {

// Call in the forked child, before dropping to the process's uid.
Status restrict_for_user_process();

}  // namespace abx::runtime::init::caps
