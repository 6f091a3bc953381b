// Packs a build context or an OCI layout dir into a tar for the daemon: the
// daemon may run as another user (or elsewhere), so it gets bytes, not paths.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::cli {

namespace fs = std::filesystem;

struct TarExtra {
  std::string name;  // path inside the tar
  std::string content;
};

// Writes `dir`'s files (relative paths; symlinks as symlinks) and `extras`
// into a new tar at `out`.
Status write_tar(const fs::path& dir, const std::vector<TarExtra>& extras, const fs::path& out);

}  // namespace abx::cli
