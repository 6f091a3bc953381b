// A driver's pipes, held by the daemon: poll its stdout, stderr and exit fd.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include "interp/driver_channel.h"

namespace abx::interp {

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

namespace {

class PipeChannel final : public DriverChannel {
 public:
  explicit PipeChannel(runtime::Process process) : process_(std::move(process)) {}

  int pid() const override { return process_.pid; }

  bool send(const std::string& bytes) override {
    return static_cast<bool>(write_all(process_.stdin_fd.get(), bytes));
  }

  Ready wait(std::chrono::milliseconds wait) override {
    pollfd fds[3] = {
        {out_eof_ ? -1 : process_.stdout_fd.get(), POLLIN, 0},
        {err_eof_ ? -1 : process_.stderr_fd.get(), POLLIN, 0},
        {process_.exit_fd.get(), POLLIN, 0},
    };
    if (::poll(fds, 3, static_cast<int>(wait.count())) < 0) return {};  // EINTR
    return {fds[0].revents != 0, fds[1].revents != 0, fds[2].revents != 0};
  }

  ReadState read(runtime::OutputStream stream, std::string& out) override {
    const bool is_out = stream == runtime::OutputStream::kStdout;
    bool& eof = is_out ? out_eof_ : err_eof_;
    if (eof) return ReadState::kEof;
    const int fd = is_out ? process_.stdout_fd.get() : process_.stderr_fd.get();
    eof = read_available(fd, out) == ReadState::kEof;
    return eof ? ReadState::kEof : ReadState::kOpen;
  }

  // The exit fd yields an int32 wait status once the process is reaped;
  // give it a moment in case stdout closed first.
  std::string exit_description() override {
    pollfd exit_poll{process_.exit_fd.get(), POLLIN, 0};
    int32_t status = 0;
    if (::poll(&exit_poll, 1, 500) == 1 &&
        ::read(process_.exit_fd.get(), &status, sizeof status) == sizeof status)
      return describe_wait_status(status);
    return "ended without an exit status";
  }

 private:
  runtime::Process process_;
  bool out_eof_ = false;
  bool err_eof_ = false;
};

}  // namespace

Result<std::unique_ptr<DriverChannel>> pipe_channel(runtime::Process process) {
  for (int fd : {process.stdout_fd.get(), process.stderr_fd.get()}) {
    if (auto s = set_nonblocking(fd); !s) return s.error();
  }
  return std::unique_ptr<DriverChannel>(std::make_unique<PipeChannel>(std::move(process)));
}

}  // namespace abx::interp
