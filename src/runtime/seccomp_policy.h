// The sandbox's seccomp filter: at least Docker's default deny list, kept as
// tables (data) so a reviewer reads the policy, not the code that applies it.
// Compiled into abx-init (which loads it) and abx_runtime (for tests).
#pragma once

#include <seccomp.h>

#include <memory>

#include "common/error.h"

namespace abx::runtime::seccomp_policy {

struct FilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Filter = std::unique_ptr<void, FilterDeleter>;

// Builds the filter without loading it.
Result<Filter> build();

// Sets no_new_privs and loads the filter into the calling process; children
// inherit it.
Status load();

}  // namespace abx::runtime::seccomp_policy
