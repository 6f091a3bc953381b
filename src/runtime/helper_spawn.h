// Starting the host programs the runtime leans on (lxcfs, slirp4netns): with
// posix_spawn, which uses CLONE_VFORK and so is safe from the multi-threaded
// daemon, in a session of their own, and with no fd of ours, leaked by a
// library or not, but those named.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace abx::runtime {

// stdin is /dev/null, stdout and stderr go to `log` (truncated), and each
// (ours, theirs) of `fds` is theirs in the child; `args[0]` is the name.
Result<pid_t> spawn_helper(const char* binary, std::vector<std::string> args,
                           const std::filesystem::path& log,
                           const std::vector<std::pair<int, int>>& fds = {});

}  // namespace abx::runtime
