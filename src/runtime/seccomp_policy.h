// The sandbox's seccomp filter: at least Docker's default deny list, kept as
// tables (data) so a reviewer reads the policy, not the code that applies it.
// Compiled by the runtime; abx-init only loads the BPF (seccomp_load.cc).
#pragma once

#include <seccomp.h>

#include <memory>
#include <string>

#include "common/error.h"

namespace abx::runtime::seccomp_policy {

struct FilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Filter = std::unique_ptr<void, FilterDeleter>;

// Builds the filter without loading it.
Result<Filter> build();

// The filter as classic BPF (struct sock_filter array), compiled once by the
// runtime and handed to every init, so that no init runs libseccomp.
Result<std::string> compile();

// Sets no_new_privs and loads compiled BPF into the calling process;
// children inherit it. Raw syscalls only (used by abx-init).
Status load(const std::string& bpf);

}  // namespace abx::runtime::seccomp_policy
