#include "interp/fd_io.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace abx::interp {

Status write_all(int fd, std::string_view data) {
  sigset_t sigpipe, previous;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigpipe, &previous);
  int failure = 0;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failure = errno;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (failure == EPIPE) {
    const timespec no_wait{};
    sigtimedwait(&sigpipe, nullptr, &no_wait);  // discard the SIGPIPE we just caused
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (failure != 0) return Error{"write to context process", failure, {}};
  return {};
}

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
