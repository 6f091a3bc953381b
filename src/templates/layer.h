// Applies a tar layer (mmdebstrap output, an OCI or docker-save layer) onto a
// template's rootfs dir, shifting ownership into the sandboxes' id range and
// turning OCI whiteouts into deletions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>

#include "common/error.h"

namespace abx::templates {

namespace fs = std::filesystem;

struct IdShift {
  uid_t uid = 0;  // host uid of sandbox uid 0; added to every entry's uid
  gid_t gid = 0;
};

struct LayerStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;  // of regular file contents
};

// Called every few thousand entries, so long extractions can show progress.
using LayerProgressFn = std::function<void(const LayerStats&)>;

// `tar` may be compressed (gzip, zstd, xz: whatever libarchive reads).
// `rootfs` must exist and be a canonical path (no symlinks in it).
Result<LayerStats> apply_layer(const fs::path& tar, const fs::path& rootfs, IdShift shift,
                               const LayerProgressFn& progress = {});

}  // namespace abx::templates
