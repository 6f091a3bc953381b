// User-namespace id mapping: which host uids/gids the sandbox's ids map to,
// and writing /proc/<pid>/{uid,gid}_map for a freshly cloned init.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::runtime::user {

// Sandbox id 0 maps to `*_zero`; ids 1..count-1 map to `*_rest` onwards.
struct IdMap {
  uid_t uid_zero = 0, uid_rest = 0;
  gid_t gid_zero = 0, gid_rest = 0;
  uint32_t count = 1;        // number of sandbox ids mapped (1: only root)
  bool use_helpers = false;  // rootless with subordinate ids: newuidmap/newgidmap
  bool full() const { return count > 1; }
  uid_t host_uid(uint32_t sandbox_uid) const;
  gid_t host_gid(uint32_t sandbox_gid) const;
};

// As root: /etc/subuid's range for root, else 100000..165535. Rootless:
// newuidmap with the user's subordinate range, else only 0 → own uid (noted
// in `warnings`).
IdMap choose(std::vector<std::string>* warnings);

// Called by the parent while the cloned child waits.
Status write_maps(pid_t pid, const IdMap& map);

}  // namespace abx::runtime::user
