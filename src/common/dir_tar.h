// Packs a dir into a tar: a build context or an OCI layout the CLI sends to a
// daemon (which may run as another user, or elsewhere: it gets bytes, not
// paths), or a template the daemon exports as an OCI layout. A POSIX pax
// archive written here rather than with libarchive: the CLI links no
// libarchive (and its compressors) for this one writer.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx {

namespace fs = std::filesystem;

struct TarExtra {
  std::string name;  // path inside the tar
  std::string content;
};

// Writes `dir`'s files (relative paths; symlinks as symlinks) and `extras`
// into a new tar at `out`.
Status write_dir_tar(const fs::path& dir, const std::vector<TarExtra>& extras, const fs::path& out);

}  // namespace abx
