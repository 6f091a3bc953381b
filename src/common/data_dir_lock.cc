#include "common/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "common/proc_locks.h"

namespace abx {
namespace {

namespace fs = std::filesystem;

// lock_holder takes a shared lock for an instant to test the lock; a daemon
// starting at that moment retries instead of refusing.
constexpr int kLockAttempts = 50;
constexpr auto kLockRetryDelay = std::chrono::milliseconds(20);

pid_t recorded_pid(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  if (got <= 0) return 0;
  const long pid = std::strtol(text, nullptr, 10);
  return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

// Who holds the lock: the process /proc/locks names (the pid recorded in the
// file may be stale, or written by something else), else the recorded one.
pid_t holder_of(int fd) { return proc_locks::flock_holder(fd).value_or(recorded_pid(fd)); }

// 0 once locked, else the errno of the last attempt.
int try_lock(int fd, int operation) {
  for (int attempt = 1;; ++attempt) {
    if (::flock(fd, operation | LOCK_NB) == 0) return 0;
    if (errno != EWOULDBLOCK || attempt >= kLockAttempts) return errno;
    std::this_thread::sleep_for(kLockRetryDelay);
  }
}

}  // namespace

fs::path data_dir_lock_path(const fs::path& data_dir) { return data_dir / "daemon.lock"; }

Result<UniqueFd> lock_data_dir(const fs::path& data_dir) {
  const fs::path path = data_dir_lock_path(data_dir);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("open the data dir lock", path.string());
  if (const int failed = try_lock(fd.get(), LOCK_EX); failed != 0) {
    if (failed != EWOULDBLOCK) return Error{"lock the data dir", failed, path.string()};
    const pid_t holder = holder_of(fd.get());
    const std::string who = holder > 0 ? "(pid " + std::to_string(holder) + ") " : "";
    const std::string how = holder > 0
                                ? "`abx daemon stop` or `kill " + std::to_string(holder) + "`"
                                : "`abx daemon stop`";
    return Error::with_message("another abx daemon " + who + "is using the data dir " +
                               data_dir.string() + "; stop it first (" + how + ")");
  }
  const std::string line = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return Error::from_errno("record our pid in the data dir lock", path.string());
  }
  return fd;
}

std::optional<pid_t> lock_holder(const fs::path& data_dir) {
  UniqueFd fd(::open(data_dir_lock_path(data_dir).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return std::nullopt;  // closing unlocks
  if (errno != EWOULDBLOCK) return std::nullopt;
  return holder_of(fd.get());
}

}  // namespace abx
