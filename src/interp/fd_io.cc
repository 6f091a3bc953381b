#include "interp/fd_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace abx::interp {

ReadState read_available(int fd, std::string& out) {
  char chunk[65536];
  // Bounded, so a process that never stops writing cannot starve the caller.
  for (int round = 0; round < 16; ++round) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      out.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return ReadState::kOpen;
    return ReadState::kEof;  // EOF, or an error that ends the stream just the same
  }
  return ReadState::kOpen;
}

Status set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Error::from_errno("set context pipe non-blocking");
  }
  return {};
}

}  // namespace abx::interp
