// Opening a file for the daemon (kOpen) as a sandbox user, so a download
// gets exactly the access that user has inside the sandbox: the path is
// resolved and the permissions checked by the kernel in the sandbox's own
// mount and user namespaces.
#pragma once

#include "agent/protocol.h"
#include "common/error.h"
#include "common/unique_fd.h"

namespace abx::agent {

// A regular file opened O_RDONLY with the filesystem ids and groups of
// request.uid/gid (root when the sandbox maps only uid 0: `full_id_map` false).
Result<UniqueFd> open_for_reading(const proto::OpenRequest& request, bool full_id_map);

}  // namespace abx::agent
