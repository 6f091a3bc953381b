// Small pipe helpers for talking to a context process.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"

namespace abx::interp {

// Writes all of `data`; a closed reader gives EPIPE, never a SIGPIPE that
// would kill the daemon.
Status write_all(int fd, std::string_view data);

enum class ReadState { kOpen, kEof };
// Appends what the non-blocking `fd` has right now to `out`.
ReadState read_available(int fd, std::string& out);

Status set_nonblocking(int fd);

}  // namespace abx::interp
