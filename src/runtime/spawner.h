// Starting a sandbox's init from the multi-threaded daemon without fork():
// clone(CLONE_VM | all namespaces) onto a private stack; the child only makes
// raw syscalls on memory the parent prepared, waits until the parent has
// written its id maps and attached its cgroups, then execs abx-init from a
// sealed memfd.
#pragma once

#include <sys/types.h>

#include <functional>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime::spawner {

// Loads the abx-init executable into a sealed, read-only memfd so that no
// sandbox can ever rewrite the binary every other sandbox runs.
Result<UniqueFd> load_init_image(const fs::path& binary);

struct InitFds {
  int image;   // from load_init_image
  int config;  // readable, holding the encoded InitConfig
  int listen;  // the control socket, listening
};

// Clones init, calls `prepare(pid)` while it waits (maps, cgroups), releases
// it and waits for its StatusReport. On any failure the child is killed and
// reaped. Returns init's host pid once it reports ready.
Result<pid_t> start_init(const InitFds& fds, const std::function<Status(pid_t)>& prepare);

}  // namespace abx::runtime::spawner
