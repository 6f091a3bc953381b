// Sandbox inits held by pidfd, and the thread that notices when one exits.
// A pid number is never used to reach an init once its pidfd is open, except
// to waitpid our own unreaped child (whose number cannot be reused before
// that); never waitpid(-1), which would steal other children of the daemon.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace abx::runtime {

// One sandbox's init, from its start (or adoption) until it is destroyed.
// Whether the process of `pidfd` has exited (a zombie not yet reaped has).
bool pidfd_exited(int pidfd);

class InitHandle {
 public:
  // `child`: started by this daemon, so it is ours to reap.
  InitHandle(std::string id, pid_t pid, uint64_t start_time, UniqueFd pidfd, bool child)
      : id_(std::move(id)),
        pid_(pid),
        start_time_(start_time),
        pidfd_(std::move(pidfd)),
        child_(child) {}

  const std::string& id() const { return id_; }
  pid_t pid() const { return pid_; }
  uint64_t start_time() const { return start_time_; }  // from /proc/<pid>/stat
  int pidfd() const { return pidfd_.get(); }
  bool child() const { return child_; }
  bool exited() const;  // the pidfd says so (a zombie not yet reaped has)

  // Why init stopped on its own ("its init was killed (out of memory)");
  // empty while it runs or when destroy() stopped it.
  std::string stopped_reason() const;
  void set_stopped_reason(std::string reason);
  // Set by destroy() before it kills: that exit is nobody's news.
  bool destroying() const;
  void set_destroying();

 private:
  const std::string id_;
  const pid_t pid_;
  const uint64_t start_time_;
  const UniqueFd pidfd_;
  const bool child_;
  mutable std::mutex mutex_;
  std::string stopped_reason_;
  bool destroying_ = false;
};

// Watches the pidfds of live inits; when one becomes readable (init exited)
// reaps it if it is our child and calls `on_exit` with its wait status
// (nullopt for an adopted init, whose status goes to its parent).
class Reaper {
 public:
  using ExitHandler = std::function<void(InitHandle&, std::optional<int> wait_status)>;
  explicit Reaper(ExitHandler on_exit);
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  void watch(std::shared_ptr<InitHandle> init);
  // Stops watching. True if the init was still watched, i.e. not reaped
  // here: the caller (destroy) then kills and reaps it itself.
  bool forget(const std::string& id);

 private:
  void run();
  void wake();

  ExitHandler on_exit_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<InitHandle>> inits_;
  UniqueFd wake_fd_;  // eventfd: the watch set changed or we are stopping
  bool stopping_ = false;
  std::thread thread_;
};

// Why an init stopped, in words for the API: "its init was killed (out of
// memory)", "its init exited (exit status 1)". `wait_status` is nullopt for
// an init that was not our child.
std::string stop_reason(std::optional<int> wait_status, bool out_of_memory);

}  // namespace abx::runtime
