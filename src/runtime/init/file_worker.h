// Serving one kFile request. Init forks a worker that does the operation
// inside the sandbox: in its namespaces, as the requested user, in its
// memory cgroup (what an upload writes is charged to the sandbox, not to
// the daemon). The worker answers on the request's own connection and exits;
// init goes straight back to serving, so a slow or stuck file (a FUSE
// mount, a huge tree) never stalls it.
#pragma once

#include <vector>

#include "common/unique_fd.h"
#include "runtime/init_protocol.h"

namespace abx::runtime::init {

// `fds`: for kWrite, the read end of the data pipe. Init's copies of the
// session and fds are closed when this returns; a fork failure is answered
// on the session.
void start_file_worker(UniqueFd session, const FileRequest& request, std::vector<UniqueFd> fds,
                       const proto::InitConfig& config);

}  // namespace abx::runtime::init
