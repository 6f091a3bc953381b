// abx-init: PID 1 of every sandbox. Started by the runtime (spawner.cc) as
//   abx-init <config fd> <status fd> <listen fd> <handoff fd>
// inside fresh user/pid/mount/ipc/uts/net namespaces, with every signal
// blocked. It contains itself (contain.cc), reports on the status fd, then
// serves the control socket (server.cc), and a TCP port too when the runtime
// asks (InitConfig::tcp_port). Single-threaded on purpose.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "agent/caps.h"
#include "agent/contain.h"
#include "agent/protocol.h"
#include "agent/server.h"

namespace abx::agent {
namespace {

struct InitFds {
  int config, status, listen, handoff;
};

// Moves `kept` down to 3, 4, 5... in their order and closes everything else
// the daemon leaked; 0-2 become /dev/null (the host's, still reachable now).
// The fds arrive with the daemon's numbers, which grow with its sandboxes:
// left there, one could sit on a number init claims later for itself
// (proto::kWritableLayerFd), and be closed by the dup3 that claims it.
void tidy_fds(const std::vector<int*>& kept) {
  for (int* fd : kept)
    if (*fd <= 2) *fd = ::fcntl(*fd, F_DUPFD_CLOEXEC, 3);
  std::vector<int*> by_number = kept;
  std::sort(by_number.begin(), by_number.end(), [](int* a, int* b) { return *a < *b; });
  int next = 3;
  // Ascending and distinct, each is at least its target: a move never lands
  // on a kept fd not yet moved.
  for (int* fd : by_number) {
    if (*fd != next) {
      const int flags = ::fcntl(*fd, F_GETFD);
      ::dup3(*fd, next, flags >= 0 && (flags & FD_CLOEXEC) ? O_CLOEXEC : 0);
      ::close(*fd);
      *fd = next;
    }
    ++next;
  }
  ::close_range(static_cast<unsigned>(next), ~0U, 0);
  const int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  if (null > 2) ::close(null);
}

// The rootfs sources the runtime opened for us (see spawner.h).
bool receive_sources(int handoff, proto::InitConfig* config) {
  std::string bytes;
  std::vector<abx::UniqueFd> fds;
  auto got = proto::recv_message(handoff, &bytes, &fds);
  ::close(handoff);
  if (!got || !*got || fds.size() != config->handoff_count()) return false;
  if (config->workload_cgroup) {
    config->workload_procs_fd = fds.back().release();
    fds.pop_back();
  }
  for (auto& fd : fds) config->source_fds.push_back(fd.release());
  return true;
}

bool read_config(int fd, proto::InitConfig* config) {
  std::string bytes;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return n == 0 && proto::decode(bytes, config);
}

void report(int fd, const Status& status) {
  proto::StatusReport r;
  const std::string step = status ? proto::kReady : proto::reply_from(status.error()).step;
  r.errnum = status ? 0 : status.error().errnum;
  std::strncpy(r.step, step.c_str(), sizeof r.step - 1);
  (void)::write(fd, &r, sizeof r);
  ::close(fd);
}

// SIGCHLD arrives through a signalfd; SIGPIPE must not kill PID 1 when a
// reader of an exit pipe has gone.
int setup_signals() {
  sigset_t chld;
  ::sigemptyset(&chld);
  ::sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_SETMASK, &chld, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return ::signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
}

// The agent wakes for whatever a command writes; woken, it would preempt
// the writer on the sandbox's CPU after every few KiB. As a batch task it
// waits for the writer's slice instead (it still runs at once on an idle
// CPU), and reads the output in large pieces. Commands are normal tasks
// again (become_workload).
void schedule_as_batch() {
  const sched_param none{};
  (void)::sched_setscheduler(0, SCHED_BATCH, &none);
}

// The TCP listener of InitConfig::tcp_port, in the sandbox's network.
abx::Result<int> listen_tcp(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return abx::Error::from_errno("agent tcp socket");
  const int on = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 64) != 0) {
    auto error = abx::Error::from_errno("agent tcp listen", "port " + std::to_string(port));
    ::close(fd);
    return error;
  }
  return fd;
}

}  // namespace
}  // namespace abx::agent

int main(int argc, char** argv) {
  using namespace abx::agent;
  if (argc != 5) return 2;
  InitFds fds{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4])};
  // A session of its own: the daemon's terminal and session are not the
  // sandbox's, and CRIU dumps a tree only if its root leads its session.
  (void)::setsid();
  // Its executable is a content-named copy (spawner::load_init_image): ps
  // and the kernel's messages still say abx-init.
  (void)::prctl(PR_SET_NAME, "abx-init", 0, 0, 0);
  ::umask(022);
  proto::InitConfig config;
  const bool configured = read_config(fds.config, &config) && receive_sources(fds.handoff, &config);
  std::vector<int*> kept = {&fds.status, &fds.listen};
  for (int& fd : config.source_fds) kept.push_back(&fd);
  if (config.workload_procs_fd >= 0) kept.push_back(&config.workload_procs_fd);
  tidy_fds(kept);
  if (!configured) {
    report(fds.status, abx::Error{"read init config", EPROTO, {}});
    return 1;
  }
  if (!config.raw_sockets) caps::withhold(CAP_NET_RAW);
  const int signal_fd = setup_signals();
  abx::Status contained = signal_fd >= 0 ? contain(config) : abx::Error::from_errno("signalfd");
  int tcp_fd = -1;
  if (contained && config.tcp_port != 0) {
    auto listening = listen_tcp(config.tcp_port);
    if (listening)
      tcp_fd = *listening;
    else
      contained = listening.error();
  }
  report(fds.status, contained);
  if (!contained) return 1;
  schedule_as_batch();
  serve(fds.listen, signal_fd, config, tcp_fd);
}
