// Starting a sandbox's init from the multi-threaded daemon without fork():
// clone(CLONE_VM | all namespaces) onto a private stack; the child only makes
// raw syscalls on memory the parent prepared, waits until the parent has
// written its id maps and attached its cgroups, then execs abx-init (see
// load_init_image). Once it runs, init receives the fds `prepare` opened for it
// (template layers, bind sources) in one message on its handoff socket.
#pragma once

#include <sys/types.h>

#include <functional>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime::spawner {

// The abx-init executable every sandbox's init runs, as a read-only fd. CRIU
// restores a process's executable by its path, so it is a private copy in
// `dir` (the state dir, root's alone), named by its content: an existing
// copy is used only if it has the same bytes and no one may write it, and a
// new one is written whole (temp name, fsync, rename) before any init runs
// from it. No sandbox can rewrite it: host root owns it, mode 0555 (sandbox
// root has no say over files of ids its namespace does not map), init is
// undumpable (its /proc/PID/exe is closed to the sandbox), and a running
// executable refuses writers (ETXTBSY). On a noexec filesystem: a sealed
// memfd, as before (such sandboxes cannot be checkpointed).
Result<UniqueFd> load_init_image(const fs::path& binary, const fs::path& dir);

struct InitFds {
  int image;   // from load_init_image
  int config;  // readable, holding the encoded InitConfig
  int listen;  // the control socket, listening
};

// Fds opened by `prepare` for init, passed in this order.
using Handoff = std::vector<UniqueFd>;

// Clones init, calls `prepare(pid)` while it waits (maps, cgroups, fds to
// hand over), releases it, hands the fds over and waits for its
// StatusReport. On any failure the child is killed and reaped. Returns
// init's host pid once it reports ready, in network namespace of its own. A root daemon makes
// `owner` (the host uid that sandbox root maps to) the owner of the new user namespace, so the
// per-user kernel counts of everything made inside (inotify instances, user
// namespaces, message queues) are charged to that uid, never to host root;
// 0 keeps the daemon's own uid.
Result<pid_t> start_init(const InitFds& fds, uid_t owner,
                         const std::function<Result<Handoff>(pid_t)>& prepare);

}  // namespace abx::runtime::spawner
