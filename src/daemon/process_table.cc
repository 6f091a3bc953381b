#include "daemon/process_table.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>

#include "common/clock.h"
#include "daemon/proto_json.h"

namespace abx::daemon {

namespace net = boost::asio;
using Descriptor = net::posix::stream_descriptor;

// How much of the start and of the end of a command's output its flight
// record keeps.
constexpr size_t kOutputEdge = 4 * 1024;

struct ProcessTable::Managed {
  Managed(net::io_context& ioc, int pid_, std::string tag_, ProcessConfig config_)
      : pid(pid_),
        tag(std::move(tag_)),
        config(std::move(config_)),
        strand(net::make_strand(ioc)),
        deadline(strand) {}

  void publish(StreamEvent event) {
    std::lock_guard lock(mutex);
    if (backlog) keep_for_first_attach(event);
    const bool last = event.last;
    if (last) end_event = event;
    for (size_t i = 0; i < subscribers.size(); ++i) {
      subscribers[i]->add_queued(event.json.size());
      const bool final_copy = i + 1 == subscribers.size();
      net::post(subscribers[i]->executor(),
                [sub = subscribers[i], event = final_copy ? std::move(event) : event]() mutable {
                  sub->push_counted(std::move(event));
                });
    }
    if (last) subscribers.clear();
  }

  // What the slowest attached stream has yet to take.
  size_t most_queued() {
    std::lock_guard lock(mutex);
    size_t most = 0;
    for (const auto& sub : subscribers) most = std::max(most, sub->queued());
    return most;
  }

  // Whether an output event would reach anyone: else it is not even made
  // (a background command no one follows streams through here too).
  bool has_listeners() {
    std::lock_guard lock(mutex);
    return backlog || !subscribers.empty();
  }

  // An adopted process's events before anyone attached: the newest
  // backlog_limit bytes of them (and its end).
  void keep_for_first_attach(const StreamEvent& event) {
    backlog->push_back(event);
    backlog_bytes += event.json.size();
    while (backlog_bytes > backlog_limit && backlog->size() > 1) {
      backlog_bytes -= backlog->front().json.size();
      backlog->pop_front();
    }
  }

  const int pid;
  const std::string tag;
  const ProcessConfig config;
  std::shared_ptr<OutputLines> lines;  // may be null
  net::strand<net::io_context::executor_type> strand;
  net::steady_timer deadline;  // Connect-Timeout-Ms: SIGKILL when it fires

  std::mutex mutex;  // guards the members below
  std::vector<std::shared_ptr<Subscription>> subscribers;
  UniqueFd stdin_fd;
  UniqueFd pty_fd;
  // In band (runtime::Sandbox::spawn_in_band): the agent holds its pipes or
  // terminal; input goes there by request.
  bool in_band = false;
  bool pty = false;
  bool stdin_open = false;
  bool reaped = false;  // its exit status (or the sandbox's end) has arrived
  // Set for a process adopted from an earlier daemon until its first attach.
  std::optional<std::deque<StreamEvent>> backlog;
  // Its end, once published: a stream that attaches after it (it found the
  // process just before it left the table) still gets it.
  std::optional<StreamEvent> end_event;
  size_t backlog_bytes = 0;
  size_t backlog_limit = 0;

  // The sandbox's OOM kills when it started (runtime::Sandbox::oom_kills):
  // more at its end, and a SIGKILL, mean the memory limit ended it.
  uint64_t oom_kills_before = 0;

  // Touched only on `strand`.
  bool deadline_fired = false;
  int open_outputs = 0;
  uint64_t bytes_read = 0;
  // The flight record's view of its output (stdout and stderr as they came):
  // the first kOutputEdge bytes, and the last ones after those.
  std::string output_head, output_tail;
  void keep_edges(std::string_view bytes) {
    const size_t to_head = std::min(bytes.size(), kOutputEdge - output_head.size());
    output_head.append(bytes.substr(0, to_head));
    bytes.remove_prefix(to_head);
    if (bytes.size() >= kOutputEdge) {  // a big read: only its end can be the tail
      output_tail.assign(bytes.substr(bytes.size() - kOutputEdge));
      return;
    }
    output_tail.append(bytes);
    if (output_tail.size() > 2 * kOutputEdge)
      output_tail.erase(0, output_tail.size() - kOutputEdge);
  }
  std::string tail() const {
    return output_tail.size() > kOutputEdge ? output_tail.substr(output_tail.size() - kOutputEdge)
                                            : output_tail;
  }
  // Set while the exit path waits for the pipes to drain; cancelled on every
  // read and close so that wait ends as soon as the last pipe closes.
  net::steady_timer* drain_waiter = nullptr;
};

namespace {

using Managed = ProcessTable::Managed;

// After the exit status arrives, output still in the pipes is forwarded until
// EOF, or until it stops flowing (a background child may keep a pipe open).
constexpr auto kOutputGrace = std::chrono::milliseconds(100);
// How much output may wait for a command's slowest stream before the daemon
// stops reading it (the command then waits, as on a pipe, the agent holding
// a little): the daemon's memory stays bounded whatever a sandbox writes.
constexpr size_t kMaxQueuedOutput = 4 * 1024 * 1024;
constexpr auto kQueuedPoll = std::chrono::milliseconds(2);

// How often wait_reaped looks: a killed process is reaped within a few ms.
constexpr auto kReapPoll = std::chrono::milliseconds(2);

// How long SendInput waits for a process to make room in its stdin: a
// process that never reads must not hold a blocking thread for good.
constexpr auto kInputWait = std::chrono::seconds(10);

// F_SETFL on a valid fd cannot fail; were it to, writes would only block.
void set_nonblocking(int fd) { (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Writes all of `bytes` to the non-blocking `fd`, waiting at most kInputWait
// for the reader to make room.
Status write_input(int fd, std::string_view bytes) {
  const auto deadline = std::chrono::steady_clock::now() + kInputWait;
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EINTR && errno != EAGAIN) return Error::from_errno("write process input");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd writable{fd, POLLOUT, 0};
    if (left.count() <= 0 || ::poll(&writable, 1, static_cast<int>(left.count())) == 0) {
      return Error{"write process input", ETIMEDOUT, "the process has not read its input for 10 s"};
    }
  }
  return {};
}

// Waits while the slowest stream holds too much. A stream that keeps taking
// counts as output for wait_outputs_quiet, so a command's end waits for the
// rest of its output; one that takes nothing for kOutputGrace does not.
net::awaitable<void> wait_for_slow_streams(Managed& process) {
  size_t queued = process.most_queued();
  if (queued <= kMaxQueuedOutput) co_return;
  net::steady_timer tick(process.strand);
  while (queued > kMaxQueuedOutput) {
    tick.expires_after(kQueuedPoll);
    boost::system::error_code ec;
    co_await tick.async_wait(net::redirect_error(net::use_awaitable, ec));
    const size_t now = process.most_queued();
    if (now < queued && process.drain_waiter) process.drain_waiter->cancel();
    queued = now;
  }
}

net::awaitable<void> drain_output(std::shared_ptr<Managed> process,
                                  std::shared_ptr<Descriptor> source, std::string name) {
  std::string buffer(64 * 1024, '\0');
  for (;;) {
    boost::system::error_code ec;
    const size_t n = co_await source->async_read_some(net::buffer(buffer),
                                                      net::redirect_error(net::use_awaitable, ec));
    if (n > 0) {
      process->bytes_read += n;
      process->keep_edges(std::string_view(buffer.data(), n));
      if (process->has_listeners())
        process->publish({proto_json::data_event(name, std::string_view(buffer.data(), n))});
      if (process->lines) process->lines->add(name, std::string_view(buffer.data(), n));
      co_await wait_for_slow_streams(*process);
    }
    if (process->drain_waiter) process->drain_waiter->cancel();
    if (ec) break;
  }
  --process->open_outputs;
  if (process->drain_waiter) process->drain_waiter->cancel();
}

void mark_reaped(Managed& process) {
  std::lock_guard lock(process.mutex);
  process.reaped = true;
}

bool is_reaped(Managed& process) {
  std::lock_guard lock(process.mutex);
  return process.reaped;
}

// What init keeps of a command for the next daemon (ProcessSpec::
// supervise_label): how the client started it, and when its deadline is (unix
// ms, 0: none). Environments too large for the label are left out of it.
std::string process_label(const std::string& tag, const ProcessConfig& config,
                          int64_t deadline_ms) {
  nlohmann::json label = {{"tag", tag},          {"cmd", config.cmd}, {"args", config.args},
                          {"envs", config.envs}, {"cwd", config.cwd}, {"deadline_ms", deadline_ms}};
  auto dump = [&] { return label.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
  std::string text = dump();
  if (text.size() <= runtime::kMaxProcessLabel) return text;
  label.erase("envs");
  label.erase("args");
  label["cmd"] = config.cmd.substr(0, 1024);
  return dump();
}

struct Label {
  std::string tag;
  ProcessConfig config;
  int64_t deadline_ms = 0;
};

// The label comes back from inside the sandbox: anything it holds is taken
// only where it has the expected type.
Label parse_label(const std::string& text) {
  Label out;
  const auto label = nlohmann::json::parse(text, nullptr, false);
  if (!label.is_object()) return out;
  auto text_of = [&](const char* key) {
    const auto it = label.find(key);
    return it != label.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  out.tag = text_of("tag");
  out.config.cmd = text_of("cmd");
  out.config.cwd = text_of("cwd");
  if (const auto args = label.find("args"); args != label.end() && args->is_array())
    for (const auto& arg : *args)
      if (arg.is_string()) out.config.args.push_back(arg.get<std::string>());
  if (const auto envs = label.find("envs"); envs != label.end() && envs->is_object())
    for (const auto& [key, value] : envs->items())
      if (value.is_string()) out.config.envs[key] = value.get<std::string>();
  if (const auto deadline = label.find("deadline_ms");
      deadline != label.end() && deadline->is_number_integer())
    out.deadline_ms = deadline->get<int64_t>();
  return out;
}

// "bash -l -c 'ls -la'": what a log line shows of a command.
std::string command_text(const ProcessConfig& config) {
  std::string out = config.cmd;
  for (const auto& arg : config.args) {
    if (!arg.empty() && arg.find_first_of(" \t'\"\\$`;&|<>()*?") == std::string::npos) {
      out += " " + arg;
      continue;
    }
    out += " '";  // as a shell would read it back
    for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += "'";
  }
  return out;
}

// What the flight record keeps of a command: its argv, user, cwd and the
// names of the env vars it was given, never their values (secrets).
nlohmann::json command_fields(const runtime::ProcessSpec& spec, const ProcessConfig& config,
                              nlohmann::json fields) {
  nlohmann::json argv = nlohmann::json::array({config.cmd});
  for (const auto& arg : config.args) argv.push_back(arg);
  nlohmann::json env_names = nlohmann::json::array();
  for (const auto& [name, value] : config.envs) env_names.push_back(name);
  fields["argv"] = std::move(argv);
  fields["envNames"] = std::move(env_names);
  fields["uid"] = spec.uid;
  fields["cwd"] = config.cwd.empty() ? spec.cwd : config.cwd;
  fields["pty"] = spec.pty;
  return fields;
}

std::string end_text(const runtime::ExitInfo& exit, StreamEnd end, bool out_of_memory) {
  if (end == StreamEnd::kDeadline) return "stopped at its timeout";
  if (end == StreamEnd::kSandboxStopped) return "ended with the sandbox";
  if (out_of_memory) return "killed: out of memory";
  if (exit.exited) return "exited with code " + std::to_string(exit.exit_code);
  return "ended: " + exit.status;
}

// The init's step ("sandbox init: chdir /x") means nothing to a caller:
// name the directory the command could not start in.
Error start_failure(const Error& error, const std::string& cwd) {
  if (error.step.rfind("sandbox init: chdir ", 0) != 0) return error;
  if (error.errnum == ENOENT || error.errnum == ENOTDIR)
    return Error::with_message("no such directory in the sandbox: " + cwd, error.errnum);
  if (error.errnum == EACCES)
    return Error::with_message("the user may not enter this directory in the sandbox: " + cwd,
                               error.errnum);
  // init resolves it inside the sandbox's root, where /proc's links to a
  // process's fds, cwd or root are refused (they could lead out of it).
  if (error.errnum == ELOOP)
    return Error::with_message(
        "not a directory inside the sandbox (a loop, or a /proc link to a process's fd, cwd or "
        "root): " +
            cwd,
        kErrBadInput);
  return error;
}

// Killed (SIGKILL, or a shell reporting its child's: 137) while the
// sandbox's OOM kills went up: its memory limit, not a caller, ended it.
bool out_of_memory(const Managed& process, const runtime::ExitInfo& exit,
                   const runtime::Sandbox& sandbox) {
  return exit.exit_code == 128 + SIGKILL && sandbox.oom_kills() > process.oom_kills_before;
}

// What the end event's `error` (E2B's CommandExitException.error) and the
// log say: the limit, and how to raise it.
std::string out_of_memory_error(uint64_t limit_bytes) {
  return "out of memory: the command reached the sandbox's memory limit (" +
         std::to_string(limit_bytes >> 20) +
         " MiB) and the kernel killed it; create the sandbox with more (abx create --memory MIB, "
         "Sandbox.create(memory_mb=...))";
}

StreamEnd end_kind(const Managed& process, const std::string& exit_error) {
  if (!exit_error.empty()) return StreamEnd::kSandboxStopped;
  return process.deadline_fired ? StreamEnd::kDeadline : StreamEnd::kExited;
}

net::awaitable<runtime::ExitInfo> wait_exit(Descriptor& exit_source, std::string* error) {
  int32_t status = 0;
  boost::system::error_code ec;
  const size_t got = co_await net::async_read(exit_source, net::buffer(&status, sizeof status),
                                              net::redirect_error(net::use_awaitable, ec));
  if (got == sizeof status) co_return runtime::decode_wait_status(status);
  *error = "the sandbox stopped before the process ended";
  co_return runtime::ExitInfo{-1, false, "signal: killed"};
}

net::awaitable<void> wait_outputs_quiet(Managed& process) {
  net::steady_timer grace(process.strand);
  process.drain_waiter = &grace;
  while (process.open_outputs > 0) {
    grace.expires_after(kOutputGrace);
    boost::system::error_code ec;
    co_await grace.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (ec != net::error::operation_aborted) break;  // a whole grace period without output
  }
  process.drain_waiter = nullptr;
}

// How long after the table's deadline an in-band command's agent kills it.
constexpr uint32_t kAgentDeadlineGrace = 2000;

// After an answer with no output, before the next read (see follow_in_band).
constexpr auto kEmptyAnswerPause = std::chrono::milliseconds(10);
// How often, and how long between, following a command is tried while the
// agent's backlog of connections is full.
constexpr int kFollowTries = 50;
constexpr auto kFollowRetry = std::chrono::milliseconds(20);

// How long one waiting read of an in-band command's output may wait.
constexpr uint32_t kFollowWaitMs = 30 * 1000;
// Reads of a command's output in flight at once (proto::kMaxReadBytes each):
// output keeps coming while this end is slow to wake.
constexpr int kFollowDepth = 4;

// The next answer of `follower`: one already come is taken at once (with
// several reads in flight, answers queue up while this end works), else
// once its fd says it has come; an error when the agent went away (the
// sandbox stopped).
net::awaitable<Result<runtime::OutputSlice>> next_slice(runtime::OutputFollower& follower,
                                                        Descriptor& ready) {
  for (;;) {
    auto answer = follower.answer();
    if (!answer) co_return answer.error();
    if (*answer) co_return std::move(**answer);
    boost::system::error_code ec;
    co_await ready.async_wait(Descriptor::wait_read, net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return Error{"follow output", ec.value(), ec.message()};
  }
}

// Streams an in-band command's output from the agent's ring, from offset
// `from`, until it ended and all of it came. Returns the stream's error
// ("" when it ended), the exit in `exit`.
net::awaitable<std::string> follow_in_band(Managed& process, runtime::OutputFollower& follower,
                                           uint64_t from, runtime::ExitInfo* exit) {
  const std::string stopped = "the sandbox stopped before the process ended";
  const int watched = ::fcntl(follower.fd(), F_DUPFD_CLOEXEC, 0);
  if (watched < 0)
    co_return "could not follow the process's output: " + Error::from_errno("dup").message();
  Descriptor ready(process.strand, watched);
  net::steady_timer pause(process.strand);
  uint64_t offset = from;
  // kFollowDepth reads in flight: the agent answers the next as soon as it
  // sent one, while this end takes that one in.
  if (!follower.ask(offset, kFollowWaitMs)) co_return stopped;
  for (int i = 1; i < kFollowDepth; ++i)
    if (!follower.ask_next(kFollowWaitMs)) co_return stopped;
  for (;;) {
    auto slice = co_await next_slice(follower, ready);
    if (!slice) co_return stopped;
    for (const auto& chunk : slice->chunks) {
      offset = chunk.offset + chunk.bytes.size();
      const char* name = process.pty                                      ? "pty"
                         : chunk.stream == runtime::OutputStream::kStderr ? "stderr"
                                                                          : "stdout";
      process.bytes_read += chunk.bytes.size();
      process.keep_edges(chunk.bytes);
      if (process.has_listeners()) process.publish({proto_json::data_event(name, chunk.bytes)});
      if (process.lines) process.lines->add(name, chunk.bytes);
    }
    if (slice->ended && offset >= slice->end) {
      *exit = runtime::decode_wait_status(slice->wait_status);
      co_return "";
    }
    if (slice->chunks.empty()) {  // the wait passed (or an agent answers too soon): not a spin
      pause.expires_after(kEmptyAnswerPause);
      boost::system::error_code ignored;
      co_await pause.async_wait(net::redirect_error(net::use_awaitable, ignored));
    }
    co_await wait_for_slow_streams(process);
    if (!follower.ask_next(kFollowWaitMs)) co_return stopped;
  }
}

// Input for an in-band command goes to the agent in pieces it takes; while
// its queue is full (EAGAIN) the rest waits, at most kInputWait.
Status send_in_band(runtime::Sandbox& sandbox, int pid, std::string_view bytes) {
  const auto give_up = std::chrono::steady_clock::now() + kInputWait;
  while (!bytes.empty()) {
    const std::string piece(bytes.substr(0, runtime::kMaxInputPiece));
    Status sent = sandbox.send_input(pid, piece);
    if (sent) {
      bytes.remove_prefix(piece.size());
      continue;
    }
    if (sent.error().errnum != EAGAIN) return sent;
    if (std::chrono::steady_clock::now() >= give_up)
      return Error{"write process input", ETIMEDOUT, "the process has not read its input for 10 s"};
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

}  // namespace

void Subscription::push_counted(StreamEvent event) {
  queue_.push_back(std::move(event));
  wake_.cancel();
}

http::Task<StreamEvent> Subscription::next(std::chrono::milliseconds wait) {
  if (queue_.empty()) {
    wake_.expires_after(wait);
    boost::system::error_code ec;
    co_await wake_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
  if (queue_.empty()) co_return StreamEvent{};
  StreamEvent event = std::move(queue_.front());
  queue_.pop_front();
  queued_ -= event.json.size();
  co_return event;
}

Result<std::shared_ptr<Subscription>> ProcessTable::start(StartProcess request,
                                                          net::any_io_executor subscriber) {
  const int64_t deadline_ms =
      request.timeout.count() > 0 ? unix_ms_now() + request.timeout.count() : 0;
  request.spec.supervise_label = process_label(request.tag, request.config, deadline_ms);
  request.spec.supervise_timeout_ms = static_cast<uint32_t>(
      std::clamp<int64_t>(request.timeout.count(), 0, std::numeric_limits<uint32_t>::max()));
  request.spec.output_buffer_bytes = pipe_bytes_;
  request.spec.output_ring_bytes = output_buffer_;
  // Its stdin stays open while no daemon runs; close_stdin lets go of it.
  request.spec.supervise_stdin = request.spec.stdin_pipe && !request.spec.pty;
  auto spawned = spawn(request.spec);
  if (!spawned) {
    Error failure = start_failure(spawned.error(), request.spec.cwd);
    log_->add("warn",
              "command did not start (" + failure.message() + "): " + command_text(request.config));
    log_->event("commands", "not started",
                command_fields(request.spec, request.config, {{"error", failure.message()}}));
    return failure;
  }
  runtime::Process& proc = *spawned;
  log_->add("info", "command started (pid " + std::to_string(proc.pid) +
                        "): " + command_text(request.config));
  log_->event(
      "commands", "started",
      command_fields(
          request.spec, request.config,
          {{"pid", proc.pid}, {"tag", request.tag}, {"timeoutMs", request.timeout.count()}}));
  auto process = std::make_shared<Managed>(ioc_, proc.pid, request.tag, std::move(request.config));
  process->oom_kills_before = sandbox_->oom_kills();
  process->lines = std::move(request.lines);
  process->pty = request.spec.pty;
  process->stdin_open = request.spec.stdin_pipe && !request.spec.pty;
  auto subscription = std::make_shared<Subscription>(std::move(subscriber));
  subscription->push({proto_json::start_event(proc.pid)});
  process->subscribers.push_back(subscription);
  follow(process, proc, request.timeout);
  return subscription;
}

// In band, the agent makes the pipes: the Process carries the pid alone.
Result<runtime::Process> ProcessTable::spawn(const runtime::ProcessSpec& spec) {
  if (!in_band_) return sandbox_->spawn(spec);
  runtime::ProcessSpec in_band = spec;
  // The agent's kill is the safety net for while no daemon runs: the
  // table's own comes first, so the end says it was the deadline.
  if (in_band.supervise_timeout_ms > 0)
    in_band.supervise_timeout_ms += std::min<uint32_t>(
        kAgentDeadlineGrace, std::numeric_limits<uint32_t>::max() - in_band.supervise_timeout_ms);
  auto pid = sandbox_->spawn_in_band(in_band);
  if (!pid) return pid.error();
  runtime::Process process;
  process.pid = *pid;
  return process;
}

namespace {
// What waits for the first attach of adopted commands is bounded per
// sandbox, not per command.
size_t adoption_backlog(size_t output_buffer, size_t commands) {
  return std::max<size_t>(64 * 1024, 2 * output_buffer / std::max<size_t>(1, commands));
}
// A deadline from a label (the sandbox's words) far beyond any real one
// would overflow the timer's nanoseconds.
constexpr int64_t kLongestDeadlineMs = int64_t{1} << 40;
}  // namespace

std::shared_ptr<Managed> ProcessTable::found_again(int pid, const std::string& label_text,
                                                   size_t backlog,
                                                   std::chrono::milliseconds* timeout) {
  Label label = parse_label(label_text);
  log_->add("info", "command found again after the daemon restarted (pid " + std::to_string(pid) +
                        "): " + command_text(label.config));
  auto process =
      std::make_shared<Managed>(ioc_, pid, std::move(label.tag), std::move(label.config));
  process->oom_kills_before = sandbox_->oom_kills();
  process->backlog.emplace();
  process->backlog_limit = backlog;
  *timeout = std::chrono::milliseconds(0);
  if (label.deadline_ms > 0)  // passed already: killed at once
    *timeout = std::chrono::milliseconds(
        std::clamp<int64_t>(label.deadline_ms - unix_ms_now(), 1, kLongestDeadlineMs));
  return process;
}

void ProcessTable::adopt_in_band(const std::vector<runtime::ListedProcess>& listed) {
  const auto count = std::count_if(listed.begin(), listed.end(),
                                   [](const auto& c) { return c.in_band && !c.ended; });
  const size_t backlog = adoption_backlog(output_buffer_, static_cast<size_t>(count));
  for (const auto& command : listed) {
    if (!command.in_band || command.ended) continue;
    {
      std::lock_guard lock(mutex_);
      if (processes_.contains(command.pid)) continue;
    }
    std::chrono::milliseconds timeout;
    auto process = found_again(command.pid, command.label, backlog, &timeout);
    process->pty = command.pty;
    process->stdin_open = command.has_stdin && !command.pty;
    track_in_band(process, command.delivered, timeout);
  }
}

void ProcessTable::adopt(std::vector<runtime::AdoptedProcess> adopted) {
  const size_t backlog = adoption_backlog(output_buffer_, adopted.size());
  for (auto& command : adopted) {
    std::chrono::milliseconds timeout;
    auto process = found_again(command.process.pid, command.label, backlog, &timeout);
    follow(process, command.process, timeout);
  }
}

void ProcessTable::track_in_band(std::shared_ptr<Managed> process, uint64_t from,
                                 std::chrono::milliseconds timeout) {
  process->in_band = true;
  {
    std::lock_guard lock(mutex_);
    processes_[process->pid] = process;
  }
  net::co_spawn(process->strand, shared_from_this()->supervise_in_band(process, from, timeout),
                net::detached);
}

void ProcessTable::follow(std::shared_ptr<Managed> process, runtime::Process& proc,
                          std::chrono::milliseconds timeout) {
  if (!proc.exit_fd.valid()) {  // in band: the agent holds every fd of it
    track_in_band(std::move(process), 0, timeout);
    return;
  }
  process->stdin_fd = std::move(proc.stdin_fd);
  if (process->stdin_fd.valid()) set_nonblocking(process->stdin_fd.get());
  std::vector<Output> outputs;
  auto add_output = [&](UniqueFd& fd, const char* name) {
    if (!fd.valid()) return;
    outputs.emplace_back(std::make_shared<Descriptor>(process->strand, fd.release()), name);
  };
  if (proc.pty_fd.valid()) {
    // The master read and written from two descriptors of its own (a dup
    // fails only out of fds, and then the output goes unread).
    UniqueFd reader(::fcntl(proc.pty_fd.get(), F_DUPFD_CLOEXEC, 0));
    set_nonblocking(proc.pty_fd.get());
    process->pty_fd = std::move(proc.pty_fd);
    add_output(reader, "pty");
  }
  add_output(proc.stdout_fd, "stdout");
  add_output(proc.stderr_fd, "stderr");
  {
    std::lock_guard lock(mutex_);
    processes_[process->pid] = process;
  }
  auto exit_source = std::make_shared<Descriptor>(process->strand, proc.exit_fd.release());
  net::co_spawn(process->strand,
                shared_from_this()->supervise(process, std::move(outputs), exit_source, timeout),
                net::detached);
}

void ProcessTable::kill_at_deadline(std::shared_ptr<Managed> process) {
  auto self = shared_from_this();
  pool_.post([this, self, process] {
    const Status killed = sandbox_->signal(process->pid, SIGKILL);
    if (killed || killed.error().errnum != EBUSY) return;
    net::post(process->strand, [this, self, process] {
      process->deadline.expires_after(std::chrono::seconds(1));
      process->deadline.async_wait([this, self, process](auto ec) {
        if (!ec) kill_at_deadline(process);
      });
    });
  });
}

void ProcessTable::arm_deadline(const std::shared_ptr<Managed>& process,
                                std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return;
  auto self = shared_from_this();
  process->deadline.expires_after(timeout);
  // The handler runs on the process's strand (the timer's executor).
  process->deadline.async_wait([this, self, process](auto ec) {
    if (ec) return;
    process->deadline_fired = true;
    kill_at_deadline(process);
  });
}

http::Task<void> ProcessTable::supervise(std::shared_ptr<Managed> process,
                                         std::vector<Output> outputs,
                                         std::shared_ptr<Descriptor> exit_source,
                                         std::chrono::milliseconds timeout) {
  auto self = shared_from_this();  // the table outlives this coroutine
  arm_deadline(process, timeout);
  for (auto& [source, name] : outputs) {
    ++process->open_outputs;
    net::co_spawn(process->strand, drain_output(process, source, name), net::detached);
  }
  std::string error;
  const runtime::ExitInfo exit = co_await wait_exit(*exit_source, &error);
  mark_reaped(*process);
  co_await wait_outputs_quiet(*process);
  for (auto& [source, name] : outputs) {
    boost::system::error_code ignored;
    source->cancel(ignored);
  }
  finish(process, exit, std::move(error));
}

// The agent enforces the deadline too (it holds the command whoever
// follows it); the table's own timer says the end was the deadline's.
http::Task<void> ProcessTable::supervise_in_band(std::shared_ptr<Managed> process, uint64_t from,
                                                 std::chrono::milliseconds timeout) {
  auto self = shared_from_this();  // the table outlives this coroutine
  arm_deadline(process, timeout);
  runtime::ExitInfo exit{-1, false, "signal: killed"};
  std::string error = "the sandbox stopped before the process ended";
  auto follower = sandbox_->follow_output(process->pid);
  net::steady_timer retry(process->strand);
  for (int tries = 1; !follower && follower.error().errnum == EAGAIN && tries < kFollowTries;
       ++tries) {  // the agent's backlog is full (many follow at once, after a restart)
    retry.expires_after(kFollowRetry);
    boost::system::error_code ignored;
    co_await retry.async_wait(net::redirect_error(net::use_awaitable, ignored));
    follower = sandbox_->follow_output(process->pid);
  }
  if (follower) error = co_await follow_in_band(*process, **follower, from, &exit);
  // Ended without its exit known: no one could reach it again, so it goes.
  if (!error.empty() && sandbox_->stopped_reason().empty())
    pool_.post([sandbox = sandbox_, pid = process->pid] { (void)sandbox->signal(pid, SIGKILL); });
  mark_reaped(*process);
  finish(process, exit, std::move(error));
}

void ProcessTable::finish(const std::shared_ptr<Managed>& process, const runtime::ExitInfo& exit,
                          std::string error) {
  process->deadline.cancel();
  {
    std::lock_guard lock(mutex_);
    processes_.erase(process->pid);
  }
  const StreamEnd end = end_kind(*process, error);
  const bool oom = end == StreamEnd::kExited && out_of_memory(*process, exit, *sandbox_);
  if (oom) error = out_of_memory_error(sandbox_->record().limits.memory_bytes);
  if (process->lines) process->lines->ended(exit);
  const std::string text = end_text(exit, end, oom);
  const std::string pid = " (pid " + std::to_string(process->pid) + ")";
  log_->add(exit.exited && exit.exit_code == 0 ? "info" : "warn",
            oom ? "command killed" + pid + ": " + error : "command " + text + pid);
  nlohmann::json fields = {
      {"pid", process->pid},
      {"exitCode", exit.exited ? nlohmann::json(exit.exit_code) : nlohmann::json()},
      {"status", text},
      {"outputBytes", process->bytes_read},
      {"outputHead", process->output_head}};
  if (!process->output_tail.empty()) fields["outputTail"] = process->tail();
  if (oom) fields["outOfMemory"] = true;
  log_->event("commands", "ended", std::move(fields));
  process->publish({proto_json::end_event(exit, error), true, end});
}

Result<std::shared_ptr<Managed>> ProcessTable::find(const ProcessSelector& selector) {
  std::lock_guard lock(mutex_);
  for (const auto& [pid, process] : processes_) {
    if (selector.pid != 0 ? pid == selector.pid : process->tag == selector.tag) return process;
  }
  const std::string what =
      selector.pid != 0 ? "pid " + std::to_string(selector.pid) : "tag '" + selector.tag + "'";
  return Error{"process with " + what + " not found", ENOENT, ""};
}

Result<std::shared_ptr<Subscription>> ProcessTable::attach(const ProcessSelector& selector,
                                                           net::any_io_executor subscriber) {
  auto process = find(selector);
  if (!process) return process.error();
  auto subscription = std::make_shared<Subscription>(std::move(subscriber));
  subscription->push({proto_json::start_event((*process)->pid)});
  std::lock_guard lock((*process)->mutex);
  if (auto& backlog = (*process)->backlog) {  // what it wrote before anyone attached
    for (auto& event : *backlog) subscription->push(std::move(event));
    const bool ended_in_backlog = !backlog->empty() && backlog->back().last;
    backlog.reset();
    if (ended_in_backlog) return subscription;
  }
  if (const auto& end = (*process)->end_event) {  // it ended as this stream attached
    subscription->push(*end);
    return subscription;
  }
  (*process)->subscribers.push_back(subscription);
  return subscription;
}

void ProcessTable::detach(const std::shared_ptr<Subscription>& subscription) {
  std::lock_guard lock(mutex_);
  for (auto& [pid, process] : processes_) {
    std::lock_guard process_lock(process->mutex);
    std::erase(process->subscribers, subscription);
  }
}

std::vector<ProcessSummary> ProcessTable::list() {
  std::lock_guard lock(mutex_);
  std::vector<ProcessSummary> out;
  for (const auto& [pid, process] : processes_) {
    out.push_back({pid, process->tag, process->config});
  }
  return out;
}

Status ProcessTable::send_input(const ProcessSelector& selector, const std::string& bytes,
                                bool to_pty) {
  auto process = find(selector);
  if (!process) return process.error();
  if ((*process)->in_band) {
    {
      std::lock_guard lock((*process)->mutex);
      if (to_pty != (*process)->pty || (!to_pty && !(*process)->stdin_open))
        return Error{to_pty ? "process has no pty" : "process stdin is closed", EINVAL, ""};
    }
    return send_in_band(*sandbox_, (*process)->pid, bytes);
  }
  std::lock_guard lock((*process)->mutex);
  const UniqueFd& fd = to_pty ? (*process)->pty_fd : (*process)->stdin_fd;
  if (!fd.valid()) {
    return Error{to_pty ? "process has no pty" : "process stdin is closed", EINVAL, ""};
  }
  return write_input(fd.get(), bytes);
}

Status ProcessTable::signal(const ProcessSelector& selector, int signo) {
  auto process = find(selector);
  if (!process) return process.error();
  return sandbox_->signal((*process)->pid, signo);
}

http::Task<void> ProcessTable::wait_reaped(const ProcessSelector& selector,
                                           std::chrono::milliseconds limit) {
  auto process = find(selector);
  if (!process) co_return;  // gone already
  std::shared_ptr<Managed> killed = std::move(*process);
  net::steady_timer tick(co_await net::this_coro::executor);
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!is_reaped(*killed) && std::chrono::steady_clock::now() < give_up) {
    tick.expires_after(kReapPoll);
    boost::system::error_code ec;
    co_await tick.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

// The sandbox keeps a copy of a command's stdin (so it outlives the
// daemon): it lets go of it first, then the command reads EOF with ours.
Status ProcessTable::close_stdin(const ProcessSelector& selector) {
  auto process = find(selector);
  if (!process) return process.error();
  if (Status released = sandbox_->close_stdin((*process)->pid); !released) return released;
  std::lock_guard lock((*process)->mutex);
  (*process)->stdin_fd.reset();
  (*process)->stdin_open = false;
  return {};
}

Status ProcessTable::resize_pty(const ProcessSelector& selector, uint16_t cols, uint16_t rows) {
  auto process = find(selector);
  if (!process) return process.error();
  if ((*process)->in_band) {
    if (!(*process)->pty) return Error{"process has no pty", EINVAL, ""};
    return sandbox_->resize_terminal((*process)->pid, cols, rows);
  }
  std::lock_guard lock((*process)->mutex);
  if (!(*process)->pty_fd.valid()) return Error{"process has no pty", EINVAL, ""};
  struct winsize size {};
  size.ws_col = cols;
  size.ws_row = rows;
  if (::ioctl((*process)->pty_fd.get(), TIOCSWINSZ, &size) != 0) {
    return Error::from_errno("resize pty");
  }
  return {};
}

}  // namespace abx::daemon
