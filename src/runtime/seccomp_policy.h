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

// Loads compiled BPF into the calling process; children inherit it across
// fork and exec, and none can remove it. Raw syscalls only (used by abx-init).
// With `no_new_privs` (every template but those whose spec has allow_setid)
// that is set first, and it too binds every descendant: set-id bits and file
// capabilities give nothing. Without it the caller must hold CAP_SYS_ADMIN in
// its user namespace (abx-init: root of the sandbox's new one), or the kernel
// refuses the filter (EACCES): it fails closed, never loads nothing. Then a
// set-id program (sudo) can make a process sandbox root: the uid and the
// capabilities (Docker's set, the bounding set caps::restrict_for_user_process
// leaves) a caller gets by asking for user root, still under this filter.
Status load(const std::string& bpf, bool no_new_privs);

}  // namespace abx::runtime::seccomp_policy
