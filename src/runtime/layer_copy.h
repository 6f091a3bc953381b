// Copies a sandbox's writable overlay layer (hostile contents) into a host
// directory of the daemon's, as a snapshot layer. Every step is relative to
// a directory fd and never follows a symlink: symlinks are copied as
// symlinks, hard links inside the layer stay links, FIFOs stay FIFOs,
// overlay whiteouts (0/0 character devices) and user.* xattrs (overlay's
// opaque marks, envd metadata) are kept; other devices and sockets are
// skipped. The walk never leaves the layer's filesystem, and is bounded in
// bytes, entries and depth.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "common/error.h"
#include "runtime/user.h"

namespace abx::runtime::layer_copy {

struct Limits {
  uint64_t max_bytes = 0;  // data bytes copied (holes are not copied)
  uint64_t max_entries = 1u << 20;
  int max_depth = 256;
  // Set: an owner of the layer's range (`first`, the sandbox's own) is
  // stored as the same sandbox id of `second` (the range layers are stored
  // with), so a sandbox's range never reaches the disk. Others stay as they are.
  std::optional<std::pair<user::IdMap, user::IdMap>> owners;
};

struct Copied {
  uint64_t bytes = 0;    // data bytes written
  uint64_t entries = 0;  // every name copied
};

// Copies everything below `from` (a directory fd of the layer) into `to` (an
// empty directory fd the daemon made). E2BIG: a limit was passed (the
// partial copy is left for the caller to remove).
Result<Copied> copy(int from, int to, const Limits& limits);

}  // namespace abx::runtime::layer_copy
