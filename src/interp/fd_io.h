// Small pipe helpers for talking to a context process (write_all is common's).
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "common/fd_io.h"  // write_all

namespace abx::interp {

enum class ReadState { kOpen, kEof };
// Appends what the non-blocking `fd` has right now to `out`.
ReadState read_available(int fd, std::string& out);

Status set_nonblocking(int fd);

}  // namespace abx::interp
