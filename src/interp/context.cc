#include "interp/context.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <nlohmann/json.hpp>

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
constexpr size_t kMaxContextId = 64;

bool is_context_id(const std::string& id) {
  const auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  };
  return !id.empty() && id.size() <= kMaxContextId && std::all_of(id.begin(), id.end(), ok);
}

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

std::string new_context_id() {
  const std::string hex = ids::random_hex(16);
  return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
}

std::string context_label(const ContextLabel& label) {
  const nlohmann::json json = {
      {"kind", "context"},     {"id", label.info.id},  {"language", label.info.language},
      {"cwd", label.info.cwd}, {"token", label.token}, {"default", label.is_default}};
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ContextLabel> parse_context_label(const std::string& text) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_object() || json.value("kind", nlohmann::json()) != "context") return std::nullopt;
  auto text_of = [&](const char* key) {
    const auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  ContextLabel label;
  label.info = {text_of("id"), text_of("language"), text_of("cwd")};
  label.token = text_of("token");
  const auto is_default = json.find("default");
  label.is_default =
      is_default != json.end() && is_default->is_boolean() && is_default->get<bool>();
  // The token marks the driver's protocol lines: one we would have made.
  const bool token_ok = label.token.size() == new_driver_token().size() && label.token.starts_with(
                                                                               "\x1e"
                                                                               "abx:");
  if (!is_context_id(label.info.id) || !find_language(label.info.language) || !token_ok ||
      label.info.cwd.empty())
    return std::nullopt;
  return label;
}

Result<std::unique_ptr<DriverChannel>> start_driver(runtime::Sandbox& sandbox,
                                                    const Language& language,
                                                    const std::map<std::string, std::string>& env,
                                                    const ContextLabel& label, bool in_band) {
  runtime::ProcessSpec spec;
  spec.argv = language.argv;
  spec.env = env;
  spec.env["ABX_INTERP_TOKEN"] = label.token;
  spec.cwd = label.info.cwd;
  spec.uid = 0;  // as E2B's kernels, which its Jupyter server starts as root
  spec.gid = 0;
  spec.supervise_label = context_label(label);
  spec.supervise_stdin = true;  // its requests: EOF would end it with the daemon
  const auto failed = [&](const Error& e) {
    return Error{"start " + language.name + " context", e.errnum, e.message()};
  };
  if (in_band) {
    auto pid = sandbox.spawn_in_band(spec);
    if (!pid) return failed(pid.error());
    return in_band_channel(sandbox, *pid, 0);
  }
  auto process = sandbox.spawn(spec);
  if (!process) return failed(process.error());
  const int pid = process->pid;
  auto channel = pipe_channel(std::move(*process));
  if (!channel) (void)sandbox.signal(pid, SIGKILL);
  return channel;
}

Context::Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
                 std::map<std::string, std::string> env, bool is_default, bool in_band)
    : info_(std::move(info)),
      language_(language),
      sandbox_(sandbox),
      env_(std::move(env)),
      token_(new_driver_token()),
      is_default_(is_default),
      in_band_(in_band) {}

Context::Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
                 Prestarted&& prestarted, bool in_band)
    : info_(std::move(info)),
      language_(language),
      sandbox_(sandbox),
      env_(std::move(prestarted.env)),
      token_(std::move(prestarted.token)),
      is_default_(true),
      in_band_(in_band) {
  channel_ = take_channel(sandbox_, std::move(prestarted));
  pid_ = channel_->pid();
}

Context::Context(const ContextLabel& label, const Language& language, runtime::Sandbox& sandbox,
                 std::map<std::string, std::string> env, std::unique_ptr<DriverChannel> adopted,
                 bool in_band)
    : info_(label.info),
      language_(language),
      sandbox_(sandbox),
      env_(std::move(env)),
      token_(label.token),
      is_default_(label.is_default),
      in_band_(in_band),
      resync_pending_(true) {
  pid_ = adopted->pid();
  channel_ = std::move(adopted);
}

Context::~Context() {
  std::lock_guard lock(mutex_);
  if (!leave_running_) stop_locked();
}

void Context::leave_running() { leave_running_ = true; }

Status Context::start() {
  std::lock_guard lock(mutex_);
  return channel_ ? Status{} : start_locked();
}

Status Context::restart() {
  // What the old driver still ran for an earlier daemon goes with it.
  kill();
  std::lock_guard lock(mutex_);
  stop_locked();
  return start_locked();
}

void Context::kill() {
  if (const int pid = pid_.load(); pid > 0) (void)sandbox_.signal(pid, SIGKILL);
}

Status Context::start_locked() {
  auto channel = start_driver(sandbox_, language_, env_, label(), in_band_);
  if (!channel) return channel.error();
  pid_ = channel.value()->pid();
  channel_ = std::move(channel.value());
  return {};
}

void Context::stop_locked() {
  if (channel_) (void)sandbox_.signal(channel_->pid(), SIGKILL);
  channel_.reset();
  pid_ = 0;
  resync_pending_ = false;
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
  if (!channel_) {
    if (auto s = start_locked(); !s) return s;
  }
  if (resync_pending_) {
    switch (resync_locked(cancelled, timeout)) {
      case Resync::kReady:
        break;
      case Resync::kDied:
        report_death(emit, "ended", false);
        return {};
      case Resync::kKilled:
        report_death(emit,
                     "was still running an execution started before the daemon restarted and "
                     "did not stop within 2 s of its interrupt, so it was killed",
                     true);
        return {};
    }
  }
  if (!channel_->send(language_.request_line(request))) {
    report_death(emit, "was gone before the code was sent", false);
    return {};
  }
  ExecutionStream stream(*channel_, token_, emit);
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
      (void)sandbox_.signal(channel_->pid(), SIGINT);
      interrupted_at = now;
    }
    if (interrupted_at && now - *interrupted_at >= kInterruptGrace) {
      report_death(emit, "did not stop within 2 s, so it was killed", true);
      return {};
    }
    stream.keepalive_if_quiet(kKeepaliveInterval);
  }
}

// The driver of an adopted context may still be running an execution the
// daemon that died sent it, or hold its unread lines: a probe that prints a
// nonce is queued behind it, and everything up to the probe's end is dropped.
// So the execution in flight at the restart completes in the sandbox (its
// output is lost with its client) and ours starts after it. A timeout or
// cancel meanwhile interrupts it, as it would our own.
Context::Resync Context::resync_locked(const std::atomic<bool>& cancelled,
                                       std::chrono::milliseconds timeout) {
  const std::string nonce = "abx-resync-" + ids::random_hex(8);
  ExecuteRequest probe;
  probe.code = fmt::format(fmt::runtime(language_.echo_format), nonce);
  if (!channel_->send(language_.request_line(probe))) return Resync::kDied;
  std::string out;  // stdout's tail: the nonce, then the probe's end line
  const auto started = Clock::now();
  std::optional<Clock::time_point> interrupted_at;
  for (;;) {
    const DriverChannel::Ready ready = channel_->wait(kPollInterval);
    std::string dropped;
    if (ready.err) (void)channel_->read(runtime::OutputStream::kStderr, dropped);
    if (ready.out && channel_->read(runtime::OutputStream::kStdout, out) == ReadState::kEof)
      return Resync::kDied;
    if (ready.ended) return Resync::kDied;
    if (const auto at = out.find(nonce); at != std::string::npos) {
      const auto end = out.find("end_of_execution", at);
      if (end != std::string::npos && out.find('\n', end) != std::string::npos) break;
    } else if (out.size() > 2 * nonce.size()) {
      out.erase(0, out.size() - nonce.size());  // keep what may be the nonce's start
    }
    const auto now = Clock::now();
    const bool timed_out = timeout.count() > 0 && now - started >= timeout;
    if (!interrupted_at && (cancelled.load() || timed_out)) {
      (void)sandbox_.signal(channel_->pid(), SIGINT);
      interrupted_at = now;
    }
    if (interrupted_at && now - *interrupted_at >= kInterruptGrace) return Resync::kKilled;
  }
  resync_pending_ = false;
  return Resync::kReady;
}

}  // namespace abx::interp
