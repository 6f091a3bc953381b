// Capabilities of the user's processes: uid 1000 ends with none (setresuid
// clears them); root keeps only Docker's default set.
#pragma once

#include <sys/capability.h>

#include "common/error.h"

namespace abx::agent::caps {

// Takes `cap` out of Docker's set for every process from now on.
void withhold(cap_value_t cap);

// Call in the forked child, before dropping to the process's uid.
Status restrict_for_user_process();

// For a child of init that runs no program (a file worker): its permitted
// and effective sets become Docker's default set too, which an exec would
// otherwise have done. Call before changing the fsuid (which then drops the
// file capabilities from the effective set).
Status keep_only_default_set();

}  // namespace abx::agent::caps
