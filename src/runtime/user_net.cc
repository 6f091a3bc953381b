#include "runtime/user_net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/fd_io.h"
#include "runtime/helper_spawn.h"

namespace abx::runtime {
namespace {

constexpr int kReadyWaitMs = 5000;
// The descriptors slirp4netns finds them on (posix_spawn dup2s them there).
constexpr int kReadyFd = 3, kExitFd = 4;

struct Pipe {
  UniqueFd read, write;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::from_errno("pipe for slirp4netns");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// slirp4netns keeps no state worth a clean exit: killed and reaped at once,
// so that whoever drops a sandbox (an I/O thread, maybe) waits no longer
// than the kernel takes.
void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// --disable-host-loopback: 10.0.2.2 (the gateway) does not lead to the
// host's 127.0.0.1. --enable-sandbox/--enable-seccomp: slirp4netns parses
// the sandbox's packets, so it drops to a mount namespace of its own and a
// syscall filter once set up.
std::vector<std::string> arguments(pid_t init) {
  return {"slirp4netns",
          "--configure",
          "--mtu=65520",
          "--disable-host-loopback",
          "--disable-dns",
          "--enable-sandbox",
          "--enable-seccomp",
          "--ready-fd=" + std::to_string(kReadyFd),
          "--exit-fd=" + std::to_string(kExitFd),
          std::to_string(init),
          "eth0"};
}

// slirp4netns writes "1" on the ready fd once the tap device is configured.
bool became_ready(int ready) {
  pollfd p{ready, POLLIN, 0};
  if (::poll(&p, 1, kReadyWaitMs) != 1) return false;
  char byte = 0;
  return ::read(ready, &byte, 1) == 1 && byte == '1';
}

std::string last_line(const std::filesystem::path& log) {
  auto text = read_file(log);
  if (!text) return "no output";
  std::string out = *text;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const size_t start = out.rfind('\n');
  return start == std::string::npos ? out : out.substr(start + 1);
}

}  // namespace

const char* UserNet::binary() {
  for (const char* path :
       {"/usr/bin/slirp4netns", "/usr/local/bin/slirp4netns", "/bin/slirp4netns"})
    if (::access(path, X_OK) == 0) return path;
  return nullptr;
}

std::string UserNet::host_nameserver() {
  auto text = read_file("/etc/resolv.conf");
  if (!text) return {};
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string keyword, address;
    in_addr parsed{};
    if (!(words >> keyword >> address) || keyword != "nameserver") continue;
    if (::inet_pton(AF_INET, address.c_str(), &parsed) == 1 && (ntohl(parsed.s_addr) >> 24) != 127)
      return address;
  }
  return {};
}

Result<bool> UserNet::wants_network(const egress::Policy& policy) {
  const bool lists = !policy.allow_cidrs.empty() || !policy.allow_hosts.empty() ||
                     !policy.deny_hosts.empty() ||
                     (!policy.deny_cidrs.empty() && !policy.denies_all());
  if (lists || !policy.rules.empty() || policy.egress_proxy)
    return Error{"set egress policy", EOPNOTSUPP,
                 "this daemon runs without root: its sandboxes reach the internet through "
                 "slirp4netns, which cannot enforce allowOut/denyOut lists, rules or an "
                 "egressProxy; ask for all of the internet or none, or run the daemon as root"};
  return !policy.denies_all();
}

Result<std::unique_ptr<UserNet>> UserNet::attach(pid_t init, const std::filesystem::path& log) {
  const char* path = binary();
  if (!path)
    return Error{"start slirp4netns", ENOENT,
                 "slirp4netns is not installed (apt-get install slirp4netns)"};
  auto ready = make_pipe();
  if (!ready) return ready.error();
  auto exit = make_pipe();
  if (!exit) return exit.error();
  auto pid = spawn_helper(path, arguments(init), log,
                          {{ready->write.get(), kReadyFd}, {exit->read.get(), kExitFd}});
  if (!pid) return pid.error();
  ready->write.reset();  // its copy alone: EOF if it dies before it is ready
  std::unique_ptr<UserNet> made(new UserNet(*pid, std::move(exit->write)));
  if (!became_ready(ready->read.get())) {
    made.reset();  // ends and reaps it, so that the log is complete
    return Error{"start slirp4netns", EIO,
                 "the sandbox's network did not come up: " + last_line(log)};
  }
  return made;
}

bool UserNet::running() {
  if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = 0;  // reaped: not ours now
  return pid_ > 0;
}

UserNet::~UserNet() {
  exit_write_.reset();
  if (pid_ > 0) end(pid_);
}

}  // namespace abx::runtime
