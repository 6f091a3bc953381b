// The runtime's side of a kFile conversation with a sandbox's init (see
// init_protocol.h and init/file_worker.h): one connection per operation,
// answered by a worker inside the sandbox.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "runtime/file_request.h"
#include "runtime/runtime.h"

namespace abx::runtime::file_client {

// Runs `request` through the init listening at `control_socket`. kWrite
// returns once the file is open, with `data` (a pipe, non-blocking) and
// `session` set: write the data, close it, then finish_write. ENOSYS: that
// init predates file workers.
Result<FileResult> run(const fs::path& control_socket, const FileRequest& request);

// After the data pipe is closed: the worker's last answer, the bytes it wrote.
Result<uint64_t> finish_write(int session);

}  // namespace abx::runtime::file_client
