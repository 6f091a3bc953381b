// Starting a user's process inside the sandbox: fork, then in the child new
// session, stdio (pipes or a pty), capabilities, ids, cwd, exec. A failure
// before exec comes back as an Error, not as a process exiting 127.
#pragma once

#include <sys/types.h>

#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime::init {

struct Launched {
  pid_t pid = 0;
  UniqueFd pty_master;  // only with spec.pty
};

// `stdio` is what the runtime passed after the exit pipe: nothing with a pty,
// else [stdin read end (if stdin_pipe)], stdout write end, stderr write end.
// `workload_procs`: the cgroup.procs the child joins first, or -1.
Result<Launched> launch(const ProcessSpec& spec, bool full_id_map, int workload_procs,
                        const std::vector<UniqueFd>& stdio);

}  // namespace abx::runtime::init
