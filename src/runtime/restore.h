// Restore of a sandbox checkpointed by Runtime::checkpoint (issue 33,
// docs/design/criu-checkpoint.md, items 5 and 6): the staging tmpfs init
// built at create is built again on the host (writable layer, /dev skeleton,
// boot id, idmapped lower layers, overlay root), every external the dump
// recorded is handed back, and `criu restore` runs from a helper in the
// sandbox's cgroups with a cgroup namespace of its own.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::runtime {

struct RestoreSpec {
  std::filesystem::path criu;
  std::filesystem::path images;  // what Runtime::checkpoint wrote
  // A fresh dir every uid may traverse (CRIU opens mount sources as sandbox
  // root, who cannot search a 0700 state dir): the staging tmpfs and binds
  // of the host sources go there, and are gone when criu_restore returns.
  std::filesystem::path work;
  uid_t uid_zero = 0;  // host uid of sandbox root: owns the staging tmpfs
  uint64_t disk_bytes = 0;
  std::vector<std::filesystem::path> layers;  // topmost first
  int translation = -1;  // user namespace for idmapped layers; -1: not idmapped
  // Puts the helper (a pid) in the sandbox's cgroups before it runs criu.
  std::function<Status(pid_t)> join;
};

// Builds the staging tmpfs at `spec.work`/stage; tear_down_stage undoes it.
Status build_stage(const RestoreSpec& spec);
void tear_down_stage(const std::filesystem::path& work);

// Restores the tree: its init's host pid. The log is images/restore.log.
Result<pid_t> criu_restore(const RestoreSpec& spec);

// Gives the restored init (`pidfd`) the daemon's new control listener
// through the stand-in pair init kept since the checkpoint (agent/protocol.h:
// proto::kCheckpointHandFd, taken from init with pidfd_getfd).
Status hand_listener(int pidfd, int listener);

}  // namespace abx::runtime
