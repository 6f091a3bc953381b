// One daemon per data dir: the daemon holds an exclusive flock on
// <data_dir>/daemon.lock for its whole life (a second one would adopt, and
// then sweep, the first one's sandboxes). The file holds the holder's pid, but
// the holder is named as /proc/locks lists it (another program may hold the
// lock, or the file may name a process that is gone), the file's pid only when
// that says nothing.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx {

std::filesystem::path data_dir_lock_path(const std::filesystem::path& data_dir);

// Takes the lock and records our pid in it; the lock lasts as long as the
// returned fd stays open. Fails with a one-line message naming the holder's
// pid when another daemon holds it.
Result<UniqueFd> lock_data_dir(const std::filesystem::path& data_dir);

// Whether a process holds the data dir's lock: its pid (0 when unknown), or
// nothing when the lock is free.
std::optional<pid_t> lock_holder(const std::filesystem::path& data_dir);

}  // namespace abx
