#include "runtime/layer_diff.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/unique_fd.h"

namespace abx::runtime::layer_diff {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "dir";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

bool is_whiteout(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

// Overlay marks a dir that hides everything below it: "trusted." as root
// on the host, "user." in a user namespace (userxattr).
bool is_opaque(int dir) {
  for (const char* name : {"user.overlay.opaque", "trusted.overlay.opaque"}) {
    char value = 0;
    if (::fgetxattr(dir, name, &value, 1) == 1 && value == 'y') return true;
  }
  return false;
}

// `name` in the layers under this dir: the topmost that has it decides (a
// whiteout there hides it).
std::optional<struct stat> in_lowers(const std::vector<int>& lowers, const std::string& name) {
  for (const int lower : lowers) {
    struct stat st {};
    if (lower < 0 || ::fstatat(lower, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (is_whiteout(st)) return std::nullopt;
    return st;
  }
  return std::nullopt;
}

class Walk {
 public:
  Walk(Diff& out, const Limits& limits) : out_(out), limits_(limits) {}

  // Returns false once a bound is reached.
  bool dir(int upper, const std::vector<int>& lowers, const std::string& path, size_t depth) {
    if (depth > limits_.max_depth) return stop();
    UniqueFd listing(::openat(upper, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR* handle = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
    if (!handle) return true;  // unreadable: nothing to say of it
    listing.release();
    bool going = true;
    while (going) {
      const dirent* entry = ::readdir(handle);
      if (!entry) break;
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      going = one(upper, lowers, path, name, depth);
    }
    ::closedir(handle);
    return going;
  }

 private:
  bool one(int upper, const std::vector<int>& lowers, const std::string& parent,
           const std::string& name, size_t depth) {
    struct stat st {};
    if (::fstatat(upper, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return true;
    const std::string path = parent + "/" + name;
    const auto below = in_lowers(lowers, name);
    if (is_whiteout(st)) {
      return !below || add(path, kind_of(below->st_mode), Change::kDeleted, 0);
    }
    if (!S_ISDIR(st.st_mode)) {
      const uint64_t size =
          S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
      return add(path, kind_of(st.st_mode), below ? Change::kChanged : Change::kAdded, size);
    }
    UniqueFd child(::openat(upper, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child.valid()) return true;
    const bool opaque = below && is_opaque(child.get());
    if (!below || !S_ISDIR(below->st_mode) || opaque) {
      if (!add(path, "dir", below ? Change::kChanged : Change::kAdded, 0)) return false;
    }
    // None under an opaque or a new dir: everything in it is added.
    std::vector<UniqueFd> owned;
    if (below && S_ISDIR(below->st_mode) && !opaque) owned = merged_below(lowers, name);
    std::vector<int> child_lowers;
    for (const UniqueFd& fd : owned) child_lowers.push_back(fd.get());
    return dir(child.get(), child_lowers, path, depth + 1);
  }

  // The lower dirs overlay merges under `name`, topmost first, as it looks
  // them up: a whiteout or a non-dir ends the stack, and so does an opaque
  // dir after itself (template builds and snapshots keep those marks), so
  // what it hides is not taken for what the sandbox changed.
  static std::vector<UniqueFd> merged_below(const std::vector<int>& lowers,
                                            const std::string& name) {
    std::vector<UniqueFd> merged;
    for (const int lower : lowers) {
      struct stat st {};
      if (lower < 0 || ::fstatat(lower, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISDIR(st.st_mode)) break;
      UniqueFd fd(::openat(lower, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd.valid()) break;
      const bool opaque = is_opaque(fd.get());
      merged.push_back(std::move(fd));
      if (opaque) break;
    }
    return merged;
  }

  bool add(const std::string& path, std::string kind, Change change, uint64_t size) {
    if (out_.changes.size() >= limits_.max_entries ||
        path_bytes_ + path.size() > limits_.max_path_bytes)
      return stop();
    path_bytes_ += path.size();
    out_.changes.push_back({path, std::move(kind), change, size});
    return true;
  }

  bool stop() {
    out_.truncated = true;
    return false;
  }

  Diff& out_;
  const Limits& limits_;
  size_t path_bytes_ = 0;
};

}  // namespace

const char* change_name(Change change) {
  switch (change) {
    case Change::kAdded:
      return "added";
    case Change::kChanged:
      return "changed";
    case Change::kDeleted:
      return "deleted";
  }
  return "changed";
}

Result<Diff> diff(int upper, const std::vector<int>& lowers, const Limits& limits) {
  Diff out;
  Walk(out, limits).dir(upper, lowers, "", 0);
  return out;
}

}  // namespace abx::runtime::layer_diff
