// E2B's volume content API on a volume's directory, as the daemon (host
// root) sees it. Sandboxes write there too, so every path is hostile: each
// lookup is openat2(RESOLVE_IN_ROOT) from the volume's own fd (runtime/
// fs_ops.h), so a link a sandbox made ("x -> /etc") resolves inside the
// volume, never on the host. Owners are sandbox ids (0 root, 1000 user),
// stored as the shared range's host ids (VolumeOwners). All calls block.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "daemon/volumes.h"

namespace abx::daemon::volume_files {

struct Entry {
  std::string name;  // "/" for the volume's root
  std::string path;  // absolute within the volume, normalised
  std::string type;  // file, directory, symlink, unknown
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t uid = 0, gid = 0;
  struct timespec atime {
  }, mtime{}, ctime{};
  std::optional<std::string> target;  // a symlink's
};

// Who a write makes owner and with which mode, when the request does not say.
struct Metadata {
  std::optional<uint32_t> uid, gid, mode;
};

// "/a/./b/../c" → "/a/c"; never above "/".
std::string normalize(const std::string& path);

class Tree {
 public:
  static Result<Tree> open(const Volumes& volumes, const std::string& id);

  Result<Entry> stat(const std::string& path) const;
  Result<std::vector<Entry>> list(const std::string& path, int depth) const;
  // `parents`: missing parents are made too, and an existing directory is
  // no error (E2B's force).
  Result<Entry> make_dir(const std::string& path, bool parents, const Metadata& meta) const;
  Status remove(const std::string& path) const;
  Result<Entry> set_metadata(const std::string& path, const Metadata& meta) const;
  Result<UniqueFd> open_read(const std::string& path) const;

  // A file being uploaded: written under a temporary name beside its
  // destination, which it replaces at commit (EEXIST unless `replace`).
  struct Upload {
    UniqueFd file, parent;
    std::string temp, name, path;
    bool replace = false;
    uint64_t replaced_bytes = 0;  // of the file it replaces
  };
  Result<Upload> begin_upload(const std::string& path, bool replace) const;
  Result<Entry> commit_upload(Upload& upload, const Metadata& meta) const;
  static void abort_upload(Upload& upload);

 private:
  Tree(UniqueFd root, VolumeOwners owners) : root_(std::move(root)), owners_(std::move(owners)) {}
  Entry describe(const struct stat& st, int fd, const std::string& path) const;
  Status apply(int fd, bool is_link, const Metadata& meta, const std::string& path) const;
  Result<uint32_t> host_uid(uint32_t uid) const;
  Result<uint32_t> host_gid(uint32_t gid) const;

  UniqueFd root_;
  VolumeOwners owners_;
};

}  // namespace abx::daemon::volume_files
