// Starting a user's process inside the sandbox: fork, then in the child new
// session, stdio (pipes or a pty), capabilities, ids, cwd, exec. A failure
// before exec comes back as an Error, not as a process exiting 127.
#pragma once

#include <sys/types.h>

#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::agent {

using runtime::ProcessSpec;

// A child forked but not yet known to have exec'd: init keeps serving its
// other clients meanwhile and settles the spawn when `report` says (EOF: it
// exec'd; a ChildFailure: what failed), the child stops, or the bound passes.
struct Launched {
  pid_t pid = 0;
  UniqueFd pty_master;  // only with spec.pty
  UniqueFd report;      // the read end of the child's close-on-exec report pipe
};

// The bound on a Launched's exec: proto::kStartBoundMs (agent/protocol.h).

// What every child of init does first, before it uses memory the sandbox
// pays for: default signal dispositions and an empty mask, the workload
// memory cgroup (`workload_procs`, its cgroup.procs, or -1), a normal OOM
// score and scheduling policy.
Status become_workload(int workload_procs);

// Then it drops to what a user process may hold: Docker's capability set
// (none unless uid is 0), and the ids of sandbox user uid/gid (groups set
// only with a full id map: without one only root exists inside).
Status become_user(uid_t uid, gid_t gid, bool set_groups);

// `stdio` is what the runtime passed after the exit pipe: nothing with a pty,
// else [stdin read end (if stdin_pipe)], stdout write end, stderr write end.
// `workload_procs`: the cgroup.procs the child joins first, or -1;
// `command_procs`: its own command group's (the request's last fd), or -1.
Result<Launched> launch(const ProcessSpec& spec, bool full_id_map, int workload_procs,
                        int command_procs, const std::vector<UniqueFd>& stdio);

// Whether `report` has something to say (readable or at EOF), without waiting.
bool start_reported(int report);

// Reads what the child reported once start_reported: ok (it exec'd) or why it
// did not. A failed child is killed unless `reaped` says it is gone already.
Status start_outcome(int report, pid_t pid, bool reaped);

// The spawn cannot wait any longer (stopped child, bound passed): the child
// is killed (not reaped yet, so the pid is still its own); init's reaper
// collects it.
void abandon_start(pid_t pid);

}  // namespace abx::agent
