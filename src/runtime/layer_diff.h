// What a sandbox changed on top of its template, like `docker diff`: read
// from its writable layer (an overlayfs upper dir) on request, not by
// watching writes. The layer is the sandbox's and hostile: names are taken
// one component at a time, nothing is followed, and depth, entries and path
// bytes are bounded (then `truncated`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::runtime::layer_diff {

enum class Change { kAdded, kChanged, kDeleted };

struct Entry {
  std::string path;  // absolute, as the sandbox sees it
  std::string kind;  // "file", "dir", "symlink" or "other"
  Change change = Change::kAdded;
  uint64_t size = 0;  // a file's or symlink's bytes; 0 for the rest
};

struct Diff {
  std::vector<Entry> changes;  // in walk order: a dir before what is in it
  bool truncated = false;      // a bound was reached: there is more
};

struct Limits {
  size_t max_entries = 100'000;
  size_t max_path_bytes = 16u << 20;
  size_t max_depth = 64;
};

const char* change_name(Change change);  // "added", "changed", "deleted"

// `upper`: a directory fd of the writable layer; `lowers`: directory fds of
// the layers under it, topmost first (trusted: the daemon's). A dir that
// only carries what changed below it (overlay copies parents up) is no
// change itself; an opaque dir (overlay's opaque mark) is "changed".
Result<Diff> diff(int upper, const std::vector<int>& lowers, const Limits& limits = {});

}  // namespace abx::runtime::layer_diff
