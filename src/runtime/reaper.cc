#include "runtime/reaper.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace abx::runtime {

bool pidfd_exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

bool InitHandle::exited() const { return pidfd_exited(pidfd_.get()); }

std::string InitHandle::stopped_reason() const {
  std::lock_guard lock(mutex_);
  return stopped_reason_;
}

void InitHandle::set_stopped_reason(std::string reason) {
  std::lock_guard lock(mutex_);
  stopped_reason_ = std::move(reason);
}

bool InitHandle::destroying() const {
  std::lock_guard lock(mutex_);
  return destroying_;
}

void InitHandle::set_destroying() {
  std::lock_guard lock(mutex_);
  destroying_ = true;
}

Reaper::Reaper(ExitHandler on_exit)
    : on_exit_(std::move(on_exit)),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      thread_([this] { run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
}

void Reaper::watch(std::shared_ptr<InitHandle> init) {
  std::lock_guard lock(mutex_);
  const std::string id = init->id();
  inits_[id] = std::move(init);
  wake();
}

bool Reaper::forget(const std::string& id) {
  std::lock_guard lock(mutex_);
  const bool watched = inits_.erase(id) > 0;
  wake();
  return watched;
}

void Reaper::wake() {
  const uint64_t one = 1;
  (void)::write(wake_fd_.get(), &one, sizeof one);
}

void Reaper::run() {
  for (;;) {
    std::vector<pollfd> fds = {{wake_fd_.get(), POLLIN, 0}};
    std::vector<std::shared_ptr<InitHandle>> polled = {nullptr};
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      for (const auto& [id, init] : inits_) {
        fds.push_back({init->pidfd(), POLLIN, 0});
        polled.push_back(init);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    uint64_t count;
    (void)::read(wake_fd_.get(), &count, sizeof count);
    std::vector<std::pair<std::shared_ptr<InitHandle>, std::optional<int>>> exited;
    {
      std::lock_guard lock(mutex_);
      for (size_t i = 1; i < fds.size(); ++i) {
        // Checked under the lock so that a concurrent forget()+destroy() owns the init.
        const auto& init = polled[i];
        if (!fds[i].revents || inits_.count(init->id()) == 0) continue;
        std::optional<int> status;
        int raw = 0;
        if (init->child() && ::waitpid(init->pid(), &raw, WNOHANG) == init->pid()) status = raw;
        inits_.erase(init->id());
        exited.emplace_back(init, status);
      }
    }
    for (auto& [init, status] : exited) on_exit_(*init, status);
  }
}

}  // namespace abx::runtime
