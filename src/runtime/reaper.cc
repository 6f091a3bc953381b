#include "runtime/reaper.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace abx::runtime {

Reaper::Reaper() : wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), thread_([this] { run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
}

void Reaper::watch(pid_t pid) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return;  // already gone: destroy() reaps it
  std::lock_guard lock(mutex_);
  pidfds_[pid] = std::move(pidfd);
  wake();
}

void Reaper::forget(pid_t pid) {
  std::lock_guard lock(mutex_);
  pidfds_.erase(pid);
  wake();
}

void Reaper::wake() {
  const uint64_t one = 1;
  (void)::write(wake_fd_.get(), &one, sizeof one);
}

void Reaper::run() {
  for (;;) {
    std::vector<pollfd> fds = {{wake_fd_.get(), POLLIN, 0}};
    std::vector<pid_t> pids = {0};
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      for (const auto& [pid, fd] : pidfds_) {
        fds.push_back({fd.get(), POLLIN, 0});
        pids.push_back(pid);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    uint64_t count;
    (void)::read(wake_fd_.get(), &count, sizeof count);
    std::lock_guard lock(mutex_);
    for (size_t i = 1; i < fds.size(); ++i) {
      // Checked under the lock so that a concurrent forget()+destroy() owns the pid.
      if (!fds[i].revents || !pidfds_.count(pids[i])) continue;
      if (::waitpid(pids[i], nullptr, WNOHANG) != 0) pidfds_.erase(pids[i]);
    }
  }
}

}  // namespace abx::runtime
