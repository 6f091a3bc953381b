// Applies a tar layer (mmdebstrap output, an OCI or docker-save layer) onto a
// template's rootfs dir, shifting ownership into the sandboxes' id range and
// turning OCI whiteouts into deletions. Every member and whiteout is applied
// relative to the rootfs's dir fd (see rooted_dir.h): a layer's own symlinks
// resolve inside the rootfs, so nothing outside it is created, changed or deleted.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>

#include "common/error.h"
#include "templates/member_writer.h"

namespace abx::templates {

namespace fs = std::filesystem;

struct LayerStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;  // of regular file contents
};

// Called every few thousand entries, so long extractions can show progress.
using LayerProgressFn = std::function<void(const LayerStats&)>;

// `tar` may be compressed (gzip, zstd, xz: whatever libarchive reads).
// `rootfs` must be a directory. A member that cannot be applied (a ".." name,
// a hard link out, a whiteout of "..") fails the layer with an error naming it;
// device nodes and sockets are skipped.
Result<LayerStats> apply_layer(const fs::path& tar, const fs::path& rootfs, IdShift shift,
                               const LayerProgressFn& progress = {});

}  // namespace abx::templates
