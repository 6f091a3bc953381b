#include "cli/command_output.h"

#include <unistd.h>

#include <cerrno>

#include "cli/terminal.h"

namespace abx::cli {

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) return false;
    if (n <= 0) return true;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

IgnoredSigpipe::IgnoredSigpipe() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old_);
}

IgnoredSigpipe::~IgnoredSigpipe() { ::sigaction(SIGPIPE, &old_, nullptr); }

CommandOutput::CommandOutput(bool raw) {
  if (raw) return;
  if (terminal::is_tty(STDOUT_FILENO)) sanitizers_[kStdout].emplace();
  if (terminal::is_tty(STDERR_FILENO)) sanitizers_[kStderr].emplace();
}

bool CommandOutput::write(Stream stream, std::string_view bytes) {
  auto& sanitizer = sanitizers_[stream];
  return write_all(stream == kStdout ? STDOUT_FILENO : STDERR_FILENO,
                   sanitizer ? sanitizer->feed(bytes) : bytes);
}

void CommandOutput::finish() {
  if (sanitizers_[kStdout]) write_all(STDOUT_FILENO, sanitizers_[kStdout]->finish());
  if (sanitizers_[kStderr]) write_all(STDERR_FILENO, sanitizers_[kStderr]->finish());
}

}  // namespace abx::cli
