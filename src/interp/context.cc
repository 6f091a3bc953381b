#include "interp/context.h"

#include <fmt/format.h>

#include <csignal>

#include "common/ids.h"
#include "interp/events.h"
#include "interp/execution_stream.h"
#include "interp/fd_io.h"
#include "interp/prestart.h"

namespace abx::interp {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollInterval{100};  // how soon a cancel is noticed
constexpr std::chrono::seconds kInterruptGrace{2};       // SIGINT, then kill after this
constexpr std::chrono::seconds kKeepaliveInterval{5};

}  // namespace

std::map<std::string, std::string> context_env(std::map<std::string, std::string> sandbox_env) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      // E2B's Jupyter server runs as root (started with sudo), and so do its
      // kernels; they only chdir to the context's cwd.
      {"HOME", "/root"},
      {"USER", "root"},
      {"LANG", "C.UTF-8"},
      {"MPLBACKEND", "Agg"},  // matplotlib renders to PNG, never to a display
  };
  for (auto& [name, value] : sandbox_env) env[name] = std::move(value);
  return env;
}

std::string new_driver_token() {
  return "\x1e"
         "abx:" +
         ids::random_hex(12) + ":";
}

Result<runtime::Process> start_driver(runtime::Sandbox& sandbox, const Language& language,
                                      const std::map<std::string, std::string>& env,
                                      const std::string& token, const std::string& cwd) {
  runtime::ProcessSpec spec;
  spec.argv = language.argv;
  spec.env = env;
  spec.env["ABX_INTERP_TOKEN"] = token;
  spec.cwd = cwd;
  spec.uid = 0;  // as E2B's kernels, which its Jupyter server starts as root
  spec.gid = 0;
  auto process = sandbox.spawn(spec);
  if (!process) {
    const Error& e = process.error();
    return Error{"start " + language.name + " context", e.errnum, e.message()};
  }
  for (int fd : {process->stdout_fd.get(), process->stderr_fd.get()}) {
    if (auto s = set_nonblocking(fd); !s) {
      (void)sandbox.signal(process->pid, SIGKILL);
      return s.error();
    }
  }
  return process;
}

Context::Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
                 std::map<std::string, std::string> env)
    : info_(std::move(info)),
      language_(language),
      sandbox_(sandbox),
      env_(std::move(env)),
      token_(new_driver_token()) {}

Context::Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
                 Prestarted&& prestarted)
    : info_(std::move(info)),
      language_(language),
      sandbox_(sandbox),
      env_(std::move(prestarted.env)),
      token_(std::move(prestarted.token)) {
  pid_ = prestarted.process.pid;
  process_ = std::move(prestarted.process);
}

Context::~Context() {
  std::lock_guard lock(mutex_);
  stop_locked();
}

Status Context::start() {
  std::lock_guard lock(mutex_);
  return process_ ? Status{} : start_locked();
}

Status Context::restart() {
  kill();
  std::lock_guard lock(mutex_);
  stop_locked();
  return start_locked();
}

void Context::kill() {
  if (const int pid = pid_.load(); pid > 0) (void)sandbox_.signal(pid, SIGKILL);
}

Status Context::start_locked() {
  auto process = start_driver(sandbox_, language_, env_, token_, info_.cwd);
  if (!process) return process.error();
  pid_ = process->pid;
  process_ = std::move(process.value());
  return {};
}

void Context::stop_locked() {
  if (process_) (void)sandbox_.signal(process_->pid, SIGKILL);
  process_.reset();
  pid_ = 0;
}

void Context::report_death(const LineSink& emit, const std::string& how, bool interrupted) {
  stop_locked();
  const std::string value =
      interrupted ? fmt::format(
                        "the {} context was interrupted and its process {}; its state is "
                        "lost and it starts afresh on the next execution",
                        language_.name, how)
                  : fmt::format(
                        "context died: the {} context process {}; its state is lost and "
                        "it starts afresh on the next execution",
                        language_.name, how);
  emit(events::error(interrupted ? "KeyboardInterrupt" : "ContextDied", value, value));
  emit(events::end_of_execution());
}

Status Context::execute(const ExecuteRequest& request, const LineSink& emit,
                        const std::atomic<bool>& cancelled, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mutex_);
  if (!process_) {
    if (auto s = start_locked(); !s) return s;
  }
  if (!write_all(process_->stdin_fd.get(), language_.request_line(request))) {
    report_death(emit, "was gone before the code was sent", false);
    return {};
  }
  ExecutionStream stream(*process_, token_, emit);
  const auto started = Clock::now();
  std::optional<Clock::time_point> interrupted_at;
  while (true) {
    const auto state = stream.step(kPollInterval);
    if (state == ExecutionStream::State::kFinished) return {};
    if (state == ExecutionStream::State::kDied) {
      report_death(emit, "ended (" + stream.exit_description() + ")", interrupted_at.has_value());
      return {};
    }
    const auto now = Clock::now();
    const bool timed_out = timeout.count() > 0 && now - started >= timeout;
    if (!interrupted_at && (cancelled.load() || timed_out)) {
      (void)sandbox_.signal(process_->pid, SIGINT);
      interrupted_at = now;
    }
    if (interrupted_at && now - *interrupted_at >= kInterruptGrace) {
      report_death(emit, "did not stop within 2 s, so it was killed", true);
      return {};
    }
    stream.keepalive_if_quiet(kKeepaliveInterval);
  }
}

}  // namespace abx::interp
