// Reaps the sandbox inits this runtime started (they are the daemon's
// children) as soon as they die, each with waitpid on its own pid: never
// waitpid(-1), which would steal other children of the daemon.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <thread>

#include "common/unique_fd.h"

namespace abx::runtime {

class Reaper {
 public:
  Reaper();
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  void watch(pid_t pid);
  // Stop watching; the caller (destroy) kills and reaps the pid itself.
  void forget(pid_t pid);

 private:
  void run();
  void wake();

  std::mutex mutex_;
  std::map<pid_t, UniqueFd> pidfds_;
  UniqueFd wake_fd_;  // eventfd: the watch set changed or we are stopping
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace abx::runtime
