// User-namespace id mapping: which host uids/gids the sandbox's ids map to,
// and writing /proc/<pid>/{uid,gid}_map for a freshly cloned init.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

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
  // The inverse: the sandbox id of a host id, nullopt when unmapped.
  std::optional<uint32_t> sandbox_uid(uid_t host) const;
  std::optional<uint32_t> sandbox_gid(gid_t host) const;
};

// As root: /etc/subuid's range for root, else 100000..165535. Rootless:
// newuidmap with the user's subordinate range, else only 0 → own uid (noted
// in `warnings`).
IdMap choose(std::vector<std::string>* warnings);

// Called by the parent while the cloned child waits.
Status write_maps(pid_t pid, const IdMap& map);

// A user namespace (its fd) that maps each host id of `from` to the host id
// of `to` for the same sandbox id: an idmapped mount made with it shows
// files stored as `from` owns them as owned by `to`'s ids, and stores what
// `to`'s ids write as `from`'s. Root only; it forks a short-lived child.
Result<UniqueFd> translating_namespace(const IdMap& from, const IdMap& to);

}  // namespace abx::runtime::user
