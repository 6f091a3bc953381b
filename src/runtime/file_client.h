// The runtime's side of a kFile conversation with a sandbox's init (see
// agent/protocol.h and agent/file_worker.h): one connection per operation,
// answered by a worker inside the sandbox.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "runtime/file_request.h"
#include "runtime/runtime.h"

namespace abx::runtime::file_client {

// Runs `request` through the init listening at `control_socket`. kWrite
// returns once the file is open, with `data` (a pipe, non-blocking) and
// `session` set: write the data, then finish_write. Closing both instead
// abandons the file (the worker removes it). ENOSYS with detail
// kNoFileWorkers: that init predates file workers.
Result<FileResult> run(const fs::path& control_socket, const FileRequest& request);

// Commits the `sent` bytes (closing `data`) and waits for the worker's last
// answer: the bytes it wrote.
Result<uint64_t> finish_write(FileResult& io, uint64_t sent);
// After the worker stopped reading the pipe: why (its last answer).
Result<uint64_t> outcome(int session);

}  // namespace abx::runtime::file_client
