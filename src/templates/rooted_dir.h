// A directory that archive members are written into, held by fd. Every path
// below it is resolved with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS),
// so a symlink a layer planted ("x -> /") resolves inside the dir, never on the
// host; the last component is then created or removed with *at() calls on a
// plain name, which never follow a symlink.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx::templates {

namespace fs = std::filesystem;

// The dir a path's last component lives in (O_PATH), and that component.
struct ParentAndName {
  UniqueFd dir;
  std::string name;
};

class RootedDir {
 public:
  // `dir` must be a directory (not a symlink to one).
  static Result<RootedDir> open(const fs::path& dir);

  int fd() const { return fd_.get(); }
  const fs::path& path() const { return path_; }

  // `rel` is normalised ("a/b/c": no "", "." or ".." parts; "" is the dir itself).
  // O_PATH|O_DIRECTORY handle of `rel`, following symlinks only inside the dir.
  Result<UniqueFd> open_dir(const std::string& rel, int flags = 0) const;
  // The parent of `rel` and its last name; missing parents are made (0755, owned as
  // own_new_dirs says) when `make_parents`.
  Result<ParentAndName> parent_of(const std::string& rel, bool make_parents) const;
  // Dirs made for missing parents get these owners (as root; else they stay the daemon's).
  void own_new_dirs(uid_t uid, gid_t gid) {
    new_dir_uid_ = uid;
    new_dir_gid_ = gid;
  }

 private:
  RootedDir(UniqueFd fd, fs::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Result<UniqueFd> make_dirs(const std::string& rel) const;

  UniqueFd fd_;
  fs::path path_;
  uid_t new_dir_uid_ = 0;
  gid_t new_dir_gid_ = 0;
};

// The names in the dir open at `dir` (no "." or "..").
Result<std::vector<std::string>> names_in(int dir);

// Removes `name` in `dir` and, if it is a directory, everything below it,
// never following a symlink; a missing `name` is fine.
Status remove_at(int dir, const std::string& name);

}  // namespace abx::templates
