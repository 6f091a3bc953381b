// The `host` template: read-only views of the host's /usr (and any top-level
// system dir that is not a merged-/usr symlink) over a small prepared tree
// holding mountpoints, a synthetic /etc and an empty home.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::templates::host {

namespace fs = std::filesystem;

// Host ids that sandbox root and `user` map to.
struct Owners {
  uid_t root_uid = 0;
  gid_t root_gid = 0;
  uid_t user_uid = 0;
  gid_t user_gid = 0;
};

// Writes the template into `dir` (which must not exist yet): dir/rootfs is
// the overlay's lower layer, dir/local is mounted on /usr/local.
Status build(const fs::path& dir, const Owners& owners);

// The mounts that make a sandbox root from a template built by build().
runtime::RootfsSpec rootfs_spec(const fs::path& dir);

// Fills `etc` (an existing empty dir) with synthetic account files and copies
// of the non-secret host files programs need.
Status write_etc(const fs::path& etc);

}  // namespace abx::templates::host
