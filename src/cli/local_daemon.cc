#include "cli/local_daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/daemon_binary.h"
#include "cli/text.h"
#include "common/daemon_port.h"
#include "common/data_dir_lock.h"
#include "common/http_client.h"
#include "common/paths.h"
#include "common/unique_fd.h"

namespace abx::cli::local_daemon {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr auto kStartTimeout = 10s;

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

bool answers_health(const std::string& url) {
  auto parsed = http::Url::parse(url);
  if (!parsed) return false;
  auto response = http::Client(*parsed).send({.method = "GET", .target = "/health"}, 2s);
  return response && response->status / 100 == 2;
}

bool port_is_free(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

std::string exe_path(pid_t pid) {
  std::error_code ec;
  std::string path = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
  // A rebuilt binary shows as "… (deleted)" in the running daemon.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

// What /proc says a process runs, arguments joined by spaces, made safe for
// a terminal and cut short; empty when it is gone.
std::string command_line(pid_t pid) {
  constexpr size_t kShown = 200;
  std::string text = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  // One line: arguments apart by spaces, their own line breaks too.
  for (char& c : text)
    if (c == '\0' || c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (text.size() > kShown) text = text.substr(0, kShown) + "...";
  return sanitize_for_terminal(text);
}

// The daemon program beside this abx (empty when missing).
fs::path our_daemon() {
  auto binary = daemon_binary();
  return binary ? *binary : fs::path();
}

// Whether `pid` runs an abx daemon (ours, or another build or install of it;
// an abx from before abx-daemon was a program of its own ran it as `abx serve`).
bool is_abx(pid_t pid) {
  const fs::path exe = exe_path(pid);
  return !exe.empty() &&
         (exe == our_daemon() || exe.filename() == "abx-daemon" || exe.filename() == "abx");
}

// The child after fork: the daemon on `listen`, its output to the log file.
[[noreturn]] void become_daemon(const fs::path& binary, const fs::path& data_dir,
                                const std::string& listen) {
  ::setsid();
  const auto log = paths::daemon_log_file(data_dir);
  // Close-on-exec: only their dup2 copies (0-2) reach the daemon. Its own
  // log goes to the same file through a rotating sink (--log-file); stderr
  // keeps what comes before that and what is not logged (a crash's report).
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd >= 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
  }
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  const Error failed = exec_daemon(
      binary, {"--listen", listen, "--data-dir", data_dir.string(), "--address-file",
               paths::daemon_address_file(data_dir).string(), "--log-file", log.string()});
  std::fprintf(stderr, "abx: %s\n", failed.message().c_str());
  ::_exit(127);
}

Status write_pid_file(const fs::path& data_dir, pid_t pid) {
  std::ofstream out(paths::daemon_pid_file(data_dir), std::ios::trunc);
  out << pid << "\n";
  if (!out.flush())
    return Error::from_errno("write pid file", paths::daemon_pid_file(data_dir).string());
  return {};
}

// Polls until the child wrote its address and answers, or exits, or time runs out.
Result<std::string> wait_until_ready(const fs::path& data_dir, pid_t pid) {
  const auto addr_file = paths::daemon_address_file(data_dir);
  const auto log = paths::daemon_log_file(data_dir).string();
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return Error{"the local daemon exited while starting; see " + log};
    }
    const std::string url = read_file(addr_file);
    if (url.ends_with('\n') && answers_health(url.substr(0, url.size() - 1))) {
      return url.substr(0, url.size() - 1);
    }
    std::this_thread::sleep_for(50ms);
  }
  return Error{"the local daemon did not answer within 10 s; see " + log};
}

// The port of the URL the daemon wrote ("http://127.0.0.1:PORT").
int port_of(const std::string& url) { return std::atoi(url.substr(url.rfind(':') + 1).c_str()); }

// Clients saved the old address (E2B_API_URL, scripts): a move is said loudly.
void warn_port_changed(uint16_t wanted, const std::string& url, const fs::path& data_dir) {
  std::fprintf(stderr,
               "abx: WARNING: port %d is taken, so the local daemon now listens on %s (port %d) "
               "and keeps that port from now on: update any saved http://127.0.0.1:%d "
               "(E2B_API_URL, ABX_SANDBOX_API_URL); the Python SDK follows on its own "
               "(logs: %s)\n",
               wanted, url.c_str(), port_of(url), wanted, paths::daemon_log_file(data_dir).c_str());
}

// The port it had last time (else the default), so saved URLs keep working;
// another free one when that is taken.
Result<std::string> spawn(const fs::path& data_dir) {
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return Error{"create " + data_dir.string(), ec.value()};
  fs::remove(paths::daemon_address_file(data_dir), ec);
  const auto remembered = daemon_port::remembered(data_dir);
  const uint16_t wanted = remembered.value_or(daemon_port::kDefault);
  // The first time, too, the daemon's log should say when it cannot have the default.
  if (!remembered) (void)daemon_port::remember(data_dir, wanted);
  const bool free = port_is_free(wanted);
  const std::string listen = "127.0.0.1:" + std::to_string(free ? wanted : 0);
  auto binary = daemon_binary();
  if (!binary) return binary.error();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno("fork the local daemon");
  if (pid == 0) become_daemon(*binary, data_dir, listen);
  if (auto st = write_pid_file(data_dir, pid); !st) return st.error();
  auto url = wait_until_ready(data_dir, pid);
  if (url && port_of(*url) != wanted) warn_port_changed(wanted, *url, data_dir);
  return url;
}

// Held by the one CLI that may start a daemon for the data dir, from its
// health check to the new daemon answering: concurrent callers wait here and
// then find that daemon's address instead of each starting their own (the
// daemons' own lock would refuse all but one, after their starters had
// removed each other's address files). The lock ends with the fd.
Result<UniqueFd> lock_starting(const fs::path& data_dir) {
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return Error{"create " + data_dir.string(), ec.value()};
  const fs::path path = data_dir / "daemon.start.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("open", path.string());
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return Error::from_errno("lock", path.string());
  }
  return fd;
}

}  // namespace

std::optional<std::string> healthy_url(const fs::path& data_dir) {
  std::string url = read_file(paths::daemon_address_file(data_dir));
  while (!url.empty() && (url.back() == '\n' || url.back() == ' ')) url.pop_back();
  if (url.empty() || !answers_health(url)) return std::nullopt;
  return url;
}

Result<StartResult> start(const fs::path& data_dir) {
  if (auto url = healthy_url(data_dir)) return StartResult{*url, true};
  auto starting = lock_starting(data_dir);
  if (!starting) return starting.error();
  // Another caller may have started one while we waited for the lock.
  if (auto url = healthy_url(data_dir)) return StartResult{*url, true};
  // A daemon holds the data dir: it may still be starting (restoring its
  // sandboxes); a second one must never start beside it.
  if (lock_holder(data_dir)) {
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto url = healthy_url(data_dir)) return StartResult{*url, true};
      if (!lock_holder(data_dir)) break;  // it exited: start a new one
      std::this_thread::sleep_for(100ms);
    }
    if (const auto holder = lock_holder(data_dir)) return not_answering(data_dir, *holder);
  }
  auto url = spawn(data_dir);
  if (!url) return url.error();
  return StartResult{*url, false};
}

Result<std::string> ensure_running(const fs::path& data_dir) {
  auto started = start(data_dir);
  if (!started) return started.error();
  if (!started->already_running) {
    std::fprintf(stderr, "abx: started the local daemon at %s (logs: %s)\n", started->url.c_str(),
                 paths::daemon_log_file(data_dir).c_str());
  }
  return started->url;
}

std::optional<pid_t> running_pid(const fs::path& data_dir) {
  // The daemon holding the data dir, however it was started (`abx serve` too).
  // Only an abx: `abx daemon stop` signals what this returns.
  if (const auto holder = lock_holder(data_dir); holder && *holder > 0 && is_abx(*holder))
    return *holder;
  const pid_t pid =
      static_cast<pid_t>(std::atoi(read_file(paths::daemon_pid_file(data_dir)).c_str()));
  if (pid <= 0 || ::kill(pid, 0) != 0) return std::nullopt;
  if (exe_path(pid) != our_daemon()) return std::nullopt;
  return pid;
}

Error not_answering(const fs::path& data_dir, pid_t pid) {
  const std::string logs = " (logs: " + paths::daemon_log_file(data_dir).string() + ")";
  if (pid <= 0)
    return Error::with_message("a process holds " + data_dir.string() +
                               " (its daemon.lock) but no daemon answers; stop it with "
                               "`abx daemon stop`" +
                               logs);
  const std::string n = std::to_string(pid);
  const std::string command = command_line(pid);
  const std::string named = command.empty() ? "pid " + n : "pid " + n + ": " + command;
  if (is_abx(pid))
    return Error::with_message("the local daemon (" + named + ") holds " + data_dir.string() +
                               " but does not answer; stop it with `abx daemon stop` or `kill " +
                               n + "`" + logs);
  return Error::with_message(
      "another program (" + named + ") holds the lock of " + data_dir.string() +
      " (daemon.lock), so no daemon can start there; stop it: `kill " + n + "`");
}

Result<bool> stop(const fs::path& data_dir) {
  if (const auto holder = lock_holder(data_dir); holder && *holder > 0 && !is_abx(*holder))
    return not_answering(data_dir, *holder);  // not ours to signal: it says whom to stop
  const auto pid = running_pid(data_dir);
  if (!pid) return false;
  if (::kill(*pid, SIGTERM) != 0) return Error::from_errno("signal the local daemon");
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  // An exited but unreaped daemon still answers kill(0); it has no exe link.
  while (::kill(*pid, 0) == 0 && !exe_path(*pid).empty()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return Error{"the local daemon (pid " + std::to_string(*pid) +
                   ") did not exit within 10 s; stop it with kill -9 " + std::to_string(*pid)};
    }
    std::this_thread::sleep_for(50ms);
  }
  std::error_code ec;
  fs::remove(paths::daemon_pid_file(data_dir), ec);
  fs::remove(paths::daemon_address_file(data_dir), ec);
  return true;
}

}  // namespace abx::cli::local_daemon
