// Who holds a file's flock: /proc/locks names the holder's pid for each lock
// (F_GETLK answers for POSIX locks only, F_OFD_GETLK gives no pid). For the
// CLI to name the process that really holds a daemon's lock, not the pid the
// lock file says.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace abx::proc_locks {

// The file a lock is on, as /proc/locks names it: MAJOR:MINOR:INODE.
struct FileId {
  unsigned major = 0;
  unsigned minor = 0;
  uint64_t inode = 0;
};

// The pid `proc_locks` (the text of /proc/locks) lists as holding a FLOCK
// lock on `file` (not one waiting for it); nothing when none is listed or the
// holder is not visible from our pid namespace (0).
std::optional<pid_t> flock_holder_in(std::string_view proc_locks, const FileId& file);

// The same for the file open at `fd`, from this machine's /proc/locks.
std::optional<pid_t> flock_holder(int fd);

}  // namespace abx::proc_locks
