// Serving one kFile request. Init forks a worker that does the operation
// inside the sandbox: in its namespaces, as the requested user, in its
// memory cgroup (what an upload writes is charged to the sandbox, not to
// the daemon). The worker answers on the request's own connection and exits;
// init goes straight back to serving, so a slow or stuck file (a FUSE
// mount, a huge tree) never stalls it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "agent/protocol.h"
#include "common/unique_fd.h"

namespace abx::agent {

// `fds`: for kWrite, the read end of the data pipe. Init's copies of the
// session and fds are closed when this returns; a fork failure is answered
// on the session. The worker's pid, or -1.
pid_t start_file_worker(UniqueFd session, const FileRequest& request, std::vector<UniqueFd> fds,
                        const proto::InitConfig& config);

// How long init lets the worker run before it kills it (even stopped), in
// seconds; 0 for a write, which ends when the daemon hangs up instead.
uint32_t operation_deadline_seconds(const FileRequest& request);

}  // namespace abx::agent
