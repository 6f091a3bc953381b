#include "templates/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fd_io.h"
#include "common/unique_fd.h"

extern char** environ;

namespace abx::templates {
namespace {

constexpr size_t kTailLines = 20;
constexpr int kKeepGoingPollMs = 100;

class LineSplitter {
 public:
  LineSplitter(const LineFn& on_line, ChildResult& result) : on_line_(on_line), result_(result) {}
  void feed(const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      // apt redraws progress with \r; each redraw is a line for us.
      if (data[i] == '\n' || data[i] == '\r') {
        flush();
      } else {
        pending_ += data[i];
      }
    }
  }
  void flush() {
    if (pending_.empty()) return;
    result_.tail.push_back(pending_);
    if (result_.tail.size() > kTailLines) result_.tail.pop_front();
    on_line_(pending_);
    pending_.clear();
  }

 private:
  const LineFn& on_line_;
  ChildResult& result_;
  std::string pending_;
};

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result<ChildResult> run_child(const std::vector<std::string>& argv, const LineFn& on_line,
                              const KeepGoingFn& keep_going) {
  auto pipe = make_pipe(argv[0]);
  if (!pipe) return pipe.error();
  UniqueFd read_end = std::move(pipe->read);
  UniqueFd write_end = std::move(pipe->write);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 2);
  // Whatever a library left open without close-on-exec stays here: apt inside
  // mmdebstrap breaks when inherited fds push its hook pipe past fd 9.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error{"spawn", rc, argv[0] + " (is it installed? scripts/install-deps.sh)"};
  write_end.reset();
  ChildResult result;
  LineSplitter lines(on_line, result);
  // A read error ends the output just as EOF does; the exit code still tells.
  bool killed = false;
  char buffer[4096];
  for (;;) {
    pollfd readable{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&readable, 1, keep_going ? kKeepGoingPollMs : -1);
    if (ready < 0 && errno != EINTR) break;
    if (!killed && keep_going && !keep_going()) {
      (void)::kill(pid, SIGKILL);
      killed = true;
    }
    if (ready <= 0) continue;
    const ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    lines.feed(buffer, static_cast<size_t>(n));
  }
  lines.flush();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error::from_errno("waitpid", argv[0]);
  }
  result.exit_code = exit_code_of(status);
  return result;
}

}  // namespace abx::templates
