#include "common/fd_io.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "common/unique_fd.h"

namespace abx {
namespace {

constexpr size_t kPiece = 1 << 16;

}  // namespace

SigpipeBlocked::SigpipeBlocked() {
  sigemptyset(&sigpipe_);
  sigaddset(&sigpipe_, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigpipe_, &previous_);
}

SigpipeBlocked::~SigpipeBlocked() {
  discard_pending();
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

void SigpipeBlocked::discard_pending() {
  const timespec no_wait{};
  while (sigtimedwait(&sigpipe_, nullptr, &no_wait) > 0) {
  }
}

Result<Pipe> make_pipe(std::string detail) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno("pipe", std::move(detail));
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Status write_all(int fd, std::string_view data, std::string step, std::string detail) {
  SigpipeBlocked blocked;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int failure = errno;
      if (failure == EPIPE) blocked.discard_pending();
      return Error{std::move(step), failure, std::move(detail)};
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

ssize_t read_some(int fd, char* buffer, size_t size) {
  ssize_t n;
  do n = ::read(fd, buffer, size);
  while (n < 0 && errno == EINTR);
  return n;
}

Status read_to_end(int fd, const PieceSink& sink, const std::string& detail) {
  char buffer[kPiece];
  for (;;) {
    const ssize_t n = read_some(fd, buffer, sizeof buffer);
    if (n < 0) return Error::from_errno("read", detail);
    if (n == 0) return {};
    if (Status st = sink(std::string_view(buffer, static_cast<size_t>(n))); !st) return st;
  }
}

Result<std::string> read_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", path.string());
  std::string text;
  const Status read = read_to_end(
      fd.get(),
      [&](std::string_view piece) {
        text += piece;
        return Status{};
      },
      path.string());
  if (!read) return read.error();
  return text;
}

}  // namespace abx
