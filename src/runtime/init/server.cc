#include "runtime/init/server.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "runtime/init/file_worker.h"
#include "runtime/init/launch.h"
#include "runtime/init/open_file.h"

namespace abx::runtime::init {
namespace {

class Server {
 public:
  Server(int listen_fd, int signal_fd, const proto::InitConfig& config)
      : listen_fd_(listen_fd), signal_fd_(signal_fd), config_(config) {}

  [[noreturn]] void run() {
    for (;;) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
      for (const auto& c : clients_) fds.push_back({c.get(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
      if (fds[1].revents) reap();
      if (fds[0].revents) accept_client();
      for (size_t i = 2; i < fds.size(); ++i)
        if (fds[i].revents) serve_client(fds[i].fd);
      std::erase_if(clients_, [](const UniqueFd& c) { return !c.valid(); });
    }
  }

 private:
  void accept_client() {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) clients_.emplace_back(fd);
  }

  // A client that hangs up (the daemon restarting) is simply dropped.
  void serve_client(int fd) {
    std::string bytes;
    std::vector<UniqueFd> fds;
    auto got = proto::recv_message(fd, &bytes, &fds);
    if (!got || !*got) {
      drop(fd);
      return;
    }
    proto::Request request;
    proto::Reply reply;
    std::vector<int> reply_fds;
    UniqueFd pty_master;
    UniqueFd opened;
    const bool decoded = proto::decode(bytes, &request);
    if (decoded && request.type == proto::RequestType::kFile) {
      start_file_worker(take(fd), request.file, std::move(fds), config_);
      return;
    }
    if (!decoded) {
      reply = proto::reply_from(Error{"decode request", EPROTO, {}});
    } else if (request.type == proto::RequestType::kSignal) {
      reply = signal(request.pid, request.signo);
    } else if (request.type == proto::RequestType::kOpen) {
      reply = open_file(request.open, &opened);
      if (opened.valid()) reply_fds.push_back(opened.get());
    } else {
      reply = spawn(request.spec, std::move(fds), &pty_master);
      if (pty_master.valid()) reply_fds.push_back(pty_master.get());
    }
    if (!proto::send_message(fd, proto::encode(reply), reply_fds)) drop(fd);
  }

  proto::Reply spawn(const ProcessSpec& spec, std::vector<UniqueFd> fds, UniqueFd* pty_master) {
    if (fds.empty()) return proto::reply_from(Error{"spawn", EINVAL, "no exit pipe"});
    UniqueFd exit_pipe = std::move(fds.front());
    fds.erase(fds.begin());
    auto launched = launch(spec, config_.full_id_map, config_.workload_procs_fd, fds);
    if (!launched) return proto::reply_from(launched.error());
    exit_pipes_[launched->pid] = std::move(exit_pipe);
    *pty_master = std::move(launched->pty_master);
    proto::Reply reply;
    reply.pid = launched->pid;
    return reply;
  }

  proto::Reply open_file(const proto::OpenRequest& request, UniqueFd* opened) {
    auto fd = open_for_reading(request, config_.full_id_map);
    if (!fd) return proto::reply_from(fd.error());
    *opened = std::move(*fd);
    return {};
  }

  // Every spawned process leads its own session and process group: signal
  // the whole group, so `bash -c 'sleep 100'` dies with its sleep and SIGINT
  // reaches a shell's foreground child. A pid that leads no group (one the
  // user started some other way) gets the signal alone.
  static proto::Reply signal(int pid, int signo) {
    if (pid <= 1) return proto::reply_from(Error{"signal", EPERM, "pid " + std::to_string(pid)});
    if (::kill(-pid, signo) == 0 || (errno == ESRCH && ::kill(pid, signo) == 0)) return {};
    return proto::reply_from(Error::from_errno("signal", "pid " + std::to_string(pid)));
  }

  // As PID 1 we inherit every orphan: reap them all, report the ones we spawned.
  void reap() {
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof info) == sizeof info) {
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = exit_pipes_.find(pid);
      if (it == exit_pipes_.end()) continue;
      const int32_t value = status;
      (void)::write(it->second.get(), &value, sizeof value);
      exit_pipes_.erase(it);
    }
  }

  // A file request's connection is the worker's alone: init lets go of it.
  UniqueFd take(int fd) {
    for (auto& c : clients_)
      if (c.get() == fd) return UniqueFd(c.release());
    return UniqueFd();
  }

  void drop(int fd) {
    for (auto& c : clients_)
      if (c.get() == fd) c.reset();
  }

  int listen_fd_;
  int signal_fd_;
  const proto::InitConfig& config_;
  std::vector<UniqueFd> clients_;
  std::map<pid_t, UniqueFd> exit_pipes_;
};

}  // namespace

void serve(int listen_fd, int signal_fd, const proto::InitConfig& config) {
  Server(listen_fd, signal_fd, config).run();
}

}  // namespace abx::runtime::init
