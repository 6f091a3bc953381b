// abx exec: runs a command in a sandbox through process.Process/Start and
// mirrors it locally: output streamed live, stdin forwarded, signals and
// window size passed on, the command's exit code returned. While it runs the
// sandbox is kept alive (as E2B's CLI does), and when the sandbox ends under
// it the user is told why instead of seeing a bare exit code.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/command_output.h"
#include "cli/commands.h"
#include "cli/error_hints.h"
#include "cli/exec.h"
#include "cli/flag_checks.h"
#include "cli/interactive_hint.h"
#include "cli/process_events.h"
#include "cli/sandbox_end.h"
#include "cli/terminal.h"
#include "cli/text.h"
#include "common/base64.h"
#include "common/connect_frame.h"
#include "common/http_client.h"
#include "common/rfc3339.h"

namespace abx::cli {
namespace {

constexpr int kInterruptedExit = 130;
// A command killed at its --timeout (the stream then ends with
// deadline_exceeded instead of an exit status, as envd's does): 124, as
// timeout(1) exits, so a script can tell it from a kill.
constexpr int kTimedOutExit = 124;
constexpr int kKilledExit = 128 + SIGKILL;
constexpr int kBrokenPipeExit = 128 + SIGPIPE;
constexpr size_t kInputChunk = 32 * 1024;
// While a command runs, a sandbox about to reach its timeout is given this
// much more, checked this often: an attached user is never cut off, and a
// sandbox left behind still ends soon after.
constexpr auto kKeepAliveCheck = std::chrono::seconds(20);
constexpr int kKeepAliveSeconds = 60;

// One argument is a shell command line already (like ssh: `-- 'ls | wc -l'`);
// several are words, quoted so bash sees exactly what the user typed.
std::string command_line(const std::vector<std::string>& words) {
  return words.size() == 1 ? words.front() : shell_join(words);
}

// envd's Signal enum by number; INT and HUP are our additions (envd knows
// TERM and KILL only), so a remote `trap ... INT` runs on Ctrl-C.
std::string signal_name(int signo) {
  switch (signo) {
    case SIGINT:
      return "SIGNAL_SIGINT";
    case SIGHUP:
      return "SIGNAL_SIGHUP";
    case SIGTERM:
      return "SIGNAL_SIGTERM";
    default:
      return "SIGNAL_SIGKILL";
  }
}

// Signals become bytes on a pipe so the poll loop handles them in order with
// everything else, outside the signal handler.
class SignalPipe {
 public:
  explicit SignalPipe(std::initializer_list<int> signals) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      read_fd_ = fds[0];
      write_fd_ = fds[1];
    }
    for (const int signo : signals) {
      struct sigaction action {};
      action.sa_handler = &SignalPipe::on_signal;
      ::sigemptyset(&action.sa_mask);
      struct sigaction old {};
      ::sigaction(signo, &action, &old);
      saved_.emplace_back(signo, old);
    }
  }
  ~SignalPipe() {
    for (const auto& [signo, old] : saved_) ::sigaction(signo, &old, nullptr);
    ::close(read_fd_);
    ::close(write_fd_);
    write_fd_ = -1;
  }
  int fd() const { return read_fd_; }
  std::vector<int> take() const {
    std::vector<int> signals;
    unsigned char signo = 0;
    while (::read(read_fd_, &signo, 1) == 1) signals.push_back(signo);
    return signals;
  }

 private:
  static void on_signal(int signo) {
    const int saved_errno = errno;
    const auto byte = static_cast<unsigned char>(signo);
    [[maybe_unused]] auto n = ::write(write_fd_, &byte, 1);
    errno = saved_errno;
  }
  static inline int write_fd_ = -1;
  int read_fd_ = -1;
  std::vector<std::pair<int, struct sigaction>> saved_;
};

class ExecSession {
 public:
  ExecSession(const ControlPlane& control, const SandboxPlane& plane, const ExecOptions& options,
              std::map<std::string, std::string> env, std::string shell)
      : control_(control),
        plane_(plane),
        options_(options),
        env_(std::move(env)),
        shell_(std::move(shell)),
        stdin_is_tty_(terminal::is_tty(STDIN_FILENO)),
        // A TTY is read only for -t or -i; piped input always goes to the command.
        forward_stdin_(options.tty || options.interactive || !stdin_is_tty_),
        // Without -t the sandbox's output is not meant for a terminal.
        output_(options.tty || options.raw) {}

  Result<int> run() {
    std::unique_ptr<terminal::RawMode> raw;
    if (options_.tty && stdin_is_tty_) raw = std::make_unique<terminal::RawMode>(STDIN_FILENO);
    SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGWINCH});
    const IgnoredSigpipe sigpipe;
    auto stream = plane_.stream("process.Process/Start", start_request(), start_headers());
    if (!stream) return stream.error();
    // First after a second: short commands never pay for the check.
    next_keep_alive_ = Clock::now() + std::chrono::seconds(1);
    while (!(*stream)->done()) {
      if (auto st = wait_and_handle(**stream, signals); !st) {
        if (auto why = sandbox_end_reason(control_.endpoint(), options_.id)) {
          return sandbox_gone(*why);
        }
        return st.error();
      }
      if (forced_exit_) return *forced_exit_;
      keep_alive();
    }
    output_.finish();
    if (forced_exit_) return *forced_exit_;
    if (!exit_code_ && stream_error_code_ == "deadline_exceeded") {
      write_all(STDERR_FILENO, "abx: the command was stopped at its timeout of " +
                                   std::to_string(options_.timeout) +
                                   " s; pass a larger --timeout (0: none)\n");
      return kTimedOutExit;
    }
    if (!exit_code_) return ended_without_status();
    // Why the sandbox ended it (its memory limit, say), after its output.
    if (!end_error_.empty()) write_all(STDERR_FILENO, "abx: " + end_error_ + "\n");
    return interrupted_ && !options_.sig_proxy ? kInterruptedExit : *exit_code_;
  }

  // Whether the shell could not be started (it is not in the image).
  bool shell_missing() const {
    return !pid_ && stream_error_.find("exec " + shell_ + ": No such file") != std::string::npos;
  }

 private:
  json start_request() const {
    json process = {{"cmd", shell_}, {"envs", env_}};
    process["args"] = options_.command.empty()
                          ? json::array({"-i", "-l"})
                          : json::array({"-l", "-c", command_line(options_.command)});
    if (!options_.cwd.empty()) process["cwd"] = options_.cwd;
    json request = {{"process", process}};
    if (options_.tty) {
      const auto size = terminal::window_size(STDIN_FILENO);
      request["pty"] = {{"size", {{"cols", size.cols}, {"rows", size.rows}}}};
    } else {
      request["stdin"] = forward_stdin_;
    }
    return request;
  }

  http::Headers start_headers() const {
    http::Headers headers{{"Keepalive-Ping-Interval", "50"}};
    if (options_.timeout > 0) {
      headers.emplace_back("Connect-Timeout-Ms", std::to_string(options_.timeout * 1000LL));
    }
    return headers;
  }

  using Clock = std::chrono::steady_clock;

  // The sandbox ended under the command: say so, and why if known.
  int sandbox_gone(const std::string& why) const {
    write_all(STDERR_FILENO, "abx: " + sandbox_ended_message(options_.id, why) + "\n");
    return kKilledExit;
  }

  Result<int> ended_without_status() const {
    if (auto why = sandbox_end_reason(control_.endpoint(), options_.id)) return sandbox_gone(*why);
    return Error{stream_error_.empty() ? "the command's stream ended without an exit status; "
                                         "see abx info " +
                                             options_.id
                                       : stream_error_};
  }

  // A sandbox that would end within kKeepAliveSeconds is given that long again.
  void keep_alive() {
    if (Clock::now() < next_keep_alive_) return;
    next_keep_alive_ = Clock::now() + kKeepAliveCheck;
    auto sandbox = control_.get_sandbox(options_.id);
    if (!sandbox) return;
    const auto end_ms = parse_rfc3339_ms(sandbox->value("endAt", ""));
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    if (end_ms && *end_ms - now_ms < kKeepAliveSeconds * 1000LL)
      (void)control_.set_timeout(options_.id, kKeepAliveSeconds);
  }

  int poll_timeout_ms(const http::ResponseStream& stream) const {
    if (stream.has_buffered()) return 0;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_keep_alive_ - Clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }

  Status wait_and_handle(http::ResponseStream& stream, const SignalPipe& signals) {
    const bool poll_stdin = forward_stdin_ && pid_ && !stdin_done_;
    std::array<pollfd, 3> fds = {pollfd{stream.fd(), POLLIN, 0}, pollfd{signals.fd(), POLLIN, 0},
                                 pollfd{poll_stdin ? STDIN_FILENO : -1, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), poll_timeout_ms(stream)) < 0 && errno != EINTR) {
      return Error::from_errno("poll");
    }
    if (fds[1].revents & POLLIN) {
      for (const int signo : signals.take()) on_signal(signo);
      if (forced_exit_) return {};
    }
    if (stream.has_buffered() || fds[0].revents) {
      if (auto st = on_stream_data(stream); !st) return st;
    }
    if (fds[2].revents) return on_stdin();
    return {};
  }

  Status on_stream_data(http::ResponseStream& stream) {
    auto bytes = stream.read_some();
    if (!bytes) return bytes.error();
    frames_.feed(*bytes);
    std::string error;
    while (auto frame = frames_.next(&error)) {
      if (auto data = e2b::match_data_event(frame->payload); data && !frame->end_stream()) {
        write_output(data->stream, data->base64);
        continue;
      }
      auto message = json::parse(frame->payload, nullptr, false);
      if (message.is_discarded()) return Error{"bad JSON in the command's output stream"};
      if (frame->end_stream()) {
        on_end_stream(message);
      } else if (message.contains("event")) {
        on_event(message["event"]);
      }
    }
    if (!error.empty()) return Error{error};
    return {};
  }

  void on_end_stream(const json& message) {
    if (!message.contains("error")) return;
    stream_error_ = message["error"].value("message", "the command's stream failed");
    stream_error_code_ = message["error"].value("code", "");
  }

  void on_event(const json& event) {
    if (event.contains("start")) pid_ = event["start"].value("pid", 0);
    if (event.contains("data")) on_output(event["data"]);
    if (event.contains("end")) {
      exit_code_ = exit_code_from_end(event["end"]);
      if (event["end"].contains("error") && event["end"]["error"].is_string())
        end_error_ = event["end"]["error"].get<std::string>();
    }
  }

  void on_output(const json& data) {
    for (const char* name : {"stdout", "pty", "stderr"})
      if (data.contains(name) && data[name].is_string())
        write_output(name, data[name].get_ref<const std::string&>());
  }

  void write_output(std::string_view name, std::string_view base64_bytes) {
    auto bytes = base64::decode(base64_bytes);
    if (!bytes) return;
    const bool written =
        name == "stderr" ? output_.write_stderr(*bytes) : output_.write_stdout(*bytes);
    if (!written) on_broken_pipe();
  }

  // Nobody reads our output any more: the command stops, as it would locally.
  void on_broken_pipe() {
    if (forced_exit_) return;
    if (pid_) (void)plane_.rpc("process.Process/SendSignal", signal_request(SIGKILL));
    forced_exit_ = kBrokenPipeExit;
  }

  json signal_request(int signo) const {
    return {{"process", process_ref()}, {"signal", signal_name(signo)}};
  }

  json process_ref() const { return {{"pid", *pid_}}; }

  Status on_stdin() {
    std::string buffer(kInputChunk, '\0');
    const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return {};
    if (n <= 0) {
      stdin_done_ = true;
      // A PTY has no stdin to close; the user ends it with Ctrl-D or exit.
      if (options_.tty) return {};
      // A failure means the command already exited; its end event tells the rest.
      (void)plane_.rpc("process.Process/CloseStdin", {{"process", process_ref()}});
      return {};
    }
    buffer.resize(static_cast<size_t>(n));
    const json input = {{options_.tty ? "pty" : "stdin", base64::encode(buffer)}};
    auto sent =
        plane_.rpc("process.Process/SendInput", {{"process", process_ref()}, {"input", input}});
    if (!sent) stdin_done_ = true;  // the command closed its input or exited
    return {};
  }

  // The first signal goes to the command as it is (--sig-proxy, Docker's
  // habit: a remote `trap` runs) or kills it (--sig-proxy=false); a second
  // one kills it and returns at once.
  void on_signal(int signo) {
    if (signo == SIGWINCH) {
      if (options_.tty && pid_) send_window_size();
      return;
    }
    if (interrupted_ || !pid_) {
      if (pid_) (void)plane_.rpc("process.Process/SendSignal", signal_request(SIGKILL));
      forced_exit_ = signo == SIGINT ? kInterruptedExit : 128 + signo;
      return;
    }
    interrupted_ = true;
    (void)plane_.rpc("process.Process/SendSignal",
                     signal_request(options_.sig_proxy ? signo : SIGKILL));
  }

  void send_window_size() {
    const auto size = terminal::window_size(STDIN_FILENO);
    (void)plane_.rpc("process.Process/Update",
                     {{"process", process_ref()},
                      {"pty", {{"size", {{"cols", size.cols}, {"rows", size.rows}}}}}});
  }

  const ControlPlane& control_;
  const SandboxPlane& plane_;
  const ExecOptions& options_;
  std::map<std::string, std::string> env_;
  const std::string shell_;
  Clock::time_point next_keep_alive_;
  const bool stdin_is_tty_;
  const bool forward_stdin_;
  CommandOutput output_;
  connect::FrameReader frames_;
  std::optional<int> pid_;
  std::optional<int> exit_code_;
  std::optional<int> forced_exit_;
  std::string stream_error_;
  std::string stream_error_code_;
  std::string end_error_;  // the end event's error: why the sandbox ended the command
  bool stdin_done_ = false;
  bool interrupted_ = false;
};

// `abx exec base -- ls`: the user meant a one-shot in a template.
Error named_a_template(const ExecOptions& options, const Error& error) {
  if (error.message().find("not found") == std::string::npos ||
      !call_api("GET", "/abx/v1/templates/" + http::url_encode(options.id)))
    return error;
  return Error{"'" + options.id + "' is a template, not a sandbox: abx run " + options.id + " -- " +
               (options.command.empty() ? "bash" : command_line(options.command)) +
               " (or abx create " + options.id + ", then abx exec ID)"};
}

}  // namespace

Result<int> run_exec(const ExecOptions& options) {
  if (options.command.empty() && !options.tty) {
    return Error{"no command given; put it after --, e.g. abx exec " + options.id + " -- ls -la"};
  }
  // Docker's rule: a terminal session needs a terminal. Piped input under -t
  // would run, then leave the remote shell waiting for more forever.
  if (options.tty && !terminal::is_tty(STDIN_FILENO)) {
    return Error{
        "-t needs a terminal on stdin (the input device is not a TTY); without -t, "
        "piped input goes to the command: abx exec " +
        options.id + " -- bash < script.sh"};
  }
  auto env = parse_key_values(options.env, "--env");
  if (!env) return env.error();
  if (options.tty && !env->contains("TERM")) {
    const char* term = std::getenv("TERM");
    (*env)["TERM"] = term && *term ? term : "xterm-256color";
  }
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const ControlPlane control(*endpoint);
  auto plane = SandboxPlane::open(control, options.id, options.user);
  if (!plane) return named_a_template(options, plane.error());
  // bash as E2B runs commands; an image without it (Alpine, busybox) gets sh.
  ExecSession bash(control, *plane, options, *env, "/bin/bash");
  auto code = bash.run();
  if (code || !bash.shell_missing()) return code;
  return ExecSession(control, *plane, options, std::move(*env), "/bin/sh").run();
}

int own_failure(const Error& error) {
  std::cerr << "abx: " << with_hint(error.message()) << "\n";
  return kOwnFailureExit;
}

Result<int> run_shell(const std::string& id, const std::string& user) {
  if (!terminal::is_tty(STDIN_FILENO))
    return Error{
        "abx shell needs a terminal on stdin; without one, pipe the commands to a "
        "shell: abx exec " +
        id + " -- bash < script.sh"};
  ExecOptions options;
  options.id = id;
  options.user = user;
  options.tty = true;
  options.interactive = true;
  auto code = run_exec(options);
  return code ? code : own_failure(code.error());
}

// abx exec: the command's exit code, or 125 when abx itself failed.
Result<int> exec_command(const ExecOptions& options) {
  hint_interactive(options.command, options.tty, "abx exec -it " + options.id);
  auto code = run_exec(options);
  return code ? code : own_failure(code.error());
}

void add_exec(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<ExecOptions>();
  auto* app = root.add_subcommand("exec", "Run a command in a sandbox: abx exec ID -- CMD [ARGS]");
  app->add_option("id", options->id, "Sandbox id")->required();
  app->add_option("command", options->command,
                  "After --: the command and its arguments, or one shell command line");
  add_exec_flags(*app, *options);
  commands.push_back({app, [options] { return exec_command(*options); }});
}

void add_exec_flags(CLI::App& app, ExecOptions& options) {
  app.add_flag("-t,--tty", options.tty,
               "Run in a pseudo-terminal (interactive programs; stdin must be a terminal)");
  app.add_flag("-i,--interactive", options.interactive,
               "Send stdin to the command even when it is a terminal (piped input always is)");
  app.add_flag("--sig-proxy,!--no-sig-proxy", options.sig_proxy,
               "Pass SIGINT/SIGTERM/SIGHUP to the command (default); without, the first "
               "one kills it")
      ->capture_default_str();
  app.add_flag("--raw", options.raw,
               "Copy output to a terminal byte for byte (by default, without -t, escape "
               "sequences and control characters are dropped when stdout/stderr is a terminal)");
  // Docker's short names too: -e, -w, -u.
  app.add_option("-e,--env", options.env, "Environment variable K=V (repeatable)")
      ->check(key_value());
  app.add_option("-w,--cwd", options.cwd, "Working directory in the sandbox");
  app.add_option("-u,--user", options.user, "user or root (default: the template's user)")
      ->check(CLI::IsMember({"user", "root"}));
  app.add_option("--timeout", options.timeout,
                 "Stop the command after this many seconds (exit code 124; 0: no limit)")
      ->check(whole_number(0, kMaxCommandTimeout, "seconds", "0: no limit; 604800 is a week"));
}

}  // namespace abx::cli
