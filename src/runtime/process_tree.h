// What the host's /proc says of a sandbox's processes, in the sandbox's own
// terms: its pids (as its pid namespace numbers them) and command lines.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "runtime/runtime.h"

namespace abx::runtime::process_tree {

// How deep the daemon's own pid namespace is (0 at the host's): a sandbox's
// pids are one level below it.
size_t own_pid_namespace_level();

// The process whose host pid is `host_pid`, or nothing once it is gone. Its
// pid and its parent's are those one level below `daemon_level`; the
// command line (the sandbox's bytes) is cut to kCommandChars.
inline constexpr size_t kCommandChars = 512;
std::optional<ProcessEntry> describe(pid_t host_pid, size_t daemon_level);

}  // namespace abx::runtime::process_tree
