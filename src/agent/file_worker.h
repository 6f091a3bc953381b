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

// `fds`: for kWrite, the read end of the data pipe (none when `tcp`: the
// session is a TCP connection, which carries the data as frames). Init's
// copies of the session and fds are closed when this returns; a fork
// failure is answered on the session. The worker's pid, or -1.
pid_t start_file_worker(UniqueFd session, const FileRequest& request, std::vector<UniqueFd> fds,
                        const proto::InitConfig& config, bool tcp = false);

// How long init lets the worker run before it kills it (even stopped), in
// seconds; 0 for a write or a kReadFile, which end when the daemon hangs up
// (or, over TCP, stops reading or sending for a minute) instead.
uint32_t operation_deadline_seconds(const FileRequest& request);

}  // namespace abx::agent
