#include "daemon/start_command.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <cstdlib>

#include "daemon/blocking_pool.h"
#include "daemon/envd_auth.h"
#include "daemon/output_lines.h"
#include "daemon/routes.h"

namespace abx::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// A ready command running longer than this is killed and counts as "not yet".
constexpr auto kCheckLimit = std::chrono::seconds(10);
// Between two checks: often enough that a create is not held long, rarely
// enough that a check (a process start in the sandbox) costs little.
constexpr auto kCheckPause = std::chrono::milliseconds(100);
// After SIGKILL, how long a check's end is waited for.
constexpr auto kReapLimit = std::chrono::seconds(5);
constexpr uint64_t kMaxTimeoutS = 3600;

runtime::ProcessSpec shell_spec(const SandboxRow& row, const std::string& command) {
  const envd_auth::SandboxUser user = routes::default_user_of(row);
  runtime::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", command};
  spec.uid = user.uid;
  spec.gid = user.gid;
  spec.cwd = row.default_cwd.empty() ? user.home : row.default_cwd;
  spec.env = envd_auth::default_env(user, false);
  for (const auto& [key, value] : row.env_vars) spec.env[key] = value;
  spec.stdin_pipe = false;
  return spec;
}

int millis_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
}

// Waits for `exit_fd` (a reaped process's status) while reading and dropping
// its output; nothing when `deadline` passes first.
std::optional<int32_t> wait_status(runtime::Process& proc, Clock::time_point deadline) {
  std::vector<pollfd> fds = {{proc.exit_fd.get(), POLLIN, 0}};
  for (const UniqueFd* out : {&proc.stdout_fd, &proc.stderr_fd}) {
    if (out->valid()) fds.push_back({out->get(), POLLIN, 0});
  }
  char buffer[4096];
  while (Clock::now() < deadline) {
    if (::poll(fds.data(), fds.size(), millis_until(deadline)) < 0 && errno != EINTR) break;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (::read(fds[i].fd, buffer, sizeof buffer) <= 0) fds[i].fd = -1;  // poll skips it now
    }
    if (fds[0].revents == 0) continue;
    int32_t status = 0;
    if (::read(fds[0].fd, &status, sizeof status) == sizeof status) return status;
    return -1;  // the sandbox died
  }
  return std::nullopt;
}

// One run of the ready command: true when it exited 0 in time.
Result<bool> check_ready(runtime::Sandbox& sandbox, const runtime::ProcessSpec& spec,
                         Clock::time_point deadline) {
  auto spawned = sandbox.spawn(spec);
  if (!spawned) return spawned.error();
  const auto limit = std::min(deadline, Clock::now() + kCheckLimit);
  if (auto status = wait_status(*spawned, limit)) return *status == 0;
  (void)sandbox.signal(spawned->pid, SIGKILL);
  (void)wait_status(*spawned, Clock::now() + kReapLimit);
  return false;
}

std::string last_output(const OutputLines& lines) {
  std::string out;
  for (const std::string& line : lines.tail()) out += (out.empty() ? "" : " | ") + line;
  return out.empty() ? "it printed nothing" : "its last output: " + out;
}

Error not_ready(const StartCommand& command, const std::string& what, const OutputLines& lines) {
  return Error::with_message("template " + command.template_id + ": the start command " + what +
                                 "; " + last_output(lines) + " (abx logs shows all of it)",
                             ETIMEDOUT);
}

// Exit 0 is not a failure: a command may start a daemon and return.
std::optional<Error> ended_badly(const StartCommand& command, const OutputLines& lines) {
  const std::optional<runtime::ExitInfo> exit = lines.exit();
  if (!exit || (exit->exited && exit->exit_code == 0)) return std::nullopt;
  return not_ready(command, "ended (" + exit->status + ") before it was ready", lines);
}

Error timed_out(const StartCommand& command, const OutputLines& lines) {
  return not_ready(command,
                   "was not ready within " + std::to_string(command.timeout.count()) +
                       " s (ready command: " + command.ready_cmd + ")",
                   lines);
}

// Blocks briefly (one request to the sandbox's init).
Result<std::shared_ptr<OutputLines>> start_in(LiveSandbox& live, const StartCommand& command,
                                              const SandboxRow& row,
                                              boost::asio::any_io_executor executor) {
  auto lines = std::make_shared<OutputLines>(live.log, "start: ");
  StartProcess request;
  request.config.cmd = "/bin/sh";
  request.config.args = {"-c", command.start_cmd};
  request.tag = "start_cmd";
  request.spec = shell_spec(row, command.start_cmd);
  request.lines = lines;
  auto started = live.processes->start(std::move(request), std::move(executor));
  if (!started) {
    return Error::with_message(
        "template " + command.template_id +
            ": the start command did not start: " + started.error().message(),
        started.error().errnum);
  }
  // Nobody reads its events: the log has its output.
  live.processes->detach(*started);
  return lines;
}

}  // namespace

std::chrono::seconds ready_timeout() {
  const char* text = std::getenv("ABX_READY_TIMEOUT_S");
  if (!text || !*text) return kDefaultReadyTimeout;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0) return kDefaultReadyTimeout;
  return std::chrono::seconds(std::min<uint64_t>(value, kMaxTimeoutS));
}

http::Task<Status> start_and_wait_ready(std::shared_ptr<LiveSandbox> live, StartCommand command,
                                        BlockingPool& pool) {
  const SandboxRow row = live->snapshot();
  auto executor = co_await boost::asio::this_coro::executor;
  Result<std::shared_ptr<OutputLines>> started = std::shared_ptr<OutputLines>();
  co_await pool.run([&] { started = start_in(*live, command, row, executor); });
  if (!started) co_return started.error();
  const OutputLines& lines = **started;
  if (command.ready_cmd.empty()) co_return Status{};
  const auto deadline = Clock::now() + command.timeout;
  const runtime::ProcessSpec spec = shell_spec(row, command.ready_cmd);
  boost::asio::steady_timer pause(executor);
  for (;;) {
    if (std::optional<Error> ended = ended_badly(command, lines)) co_return *ended;
    Result<bool> ready = false;
    co_await pool.run_long([&] { ready = check_ready(*live->sandbox, spec, deadline); });
    if (!ready) {
      co_return not_ready(command, "could not be checked (" + ready.error().message() + ")", lines);
    }
    if (*ready) co_return Status{};
    if (Clock::now() >= deadline) co_return timed_out(command, lines);
    pause.expires_after(kCheckPause);
    co_await pause.async_wait(boost::asio::use_awaitable);
  }
}

}  // namespace abx::daemon
