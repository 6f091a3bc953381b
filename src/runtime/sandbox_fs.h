// File operations inside a sandbox's root, done by the daemon on the host.
// Every path is resolved with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
// against the sandbox's root fd, so `..` and symlinks inside the sandbox can
// never reach a host file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime::sandbox_fs {

enum class FileType { kFile, kDirectory, kSymlink, kOther };

struct EntryInfo {
  std::string name;
  std::string path;  // absolute inside the sandbox
  FileType type = FileType::kOther;
  uint64_t size = 0;
  uint32_t mode = 0;  // st_mode & 07777
  std::string owner;  // "user", "root" or the uid as text
  std::string group;
  int64_t mtime_sec = 0;
  int64_t mtime_nsec = 0;
  std::string symlink_target;  // only for symlinks
};

// Errors carry errno: ENOENT → not found, EEXIST → already exists,
// ENOTDIR/EISDIR → invalid argument, ENOSPC/EDQUOT → out of disk.

// Open for reading (O_RDONLY) a regular file, as the daemon: for the
// runtime's own reads (e.g. /etc/passwd), never on a user's behalf.
Result<UniqueFd> open_read(const Sandbox& sb, const std::string& path);

// Open for reading a regular file on behalf of sandbox uid/gid: the
// sandbox's init opens it with that user's ids, so a file the user could not
// read inside the sandbox is refused (EACCES) here too. Files on /proc or
// /sys, devices, FIFOs and sockets are refused (EPERM / EINVAL), directories
// are EISDIR. Sandboxes whose init cannot open files (adopted from an older
// daemon) are served on the host with the user's filesystem ids instead.
Result<UniqueFd> open_read_as(Sandbox& sb, const std::string& path, uint32_t uid, uint32_t gid);

// Create or truncate a regular file for writing, creating missing parent
// directories, all owned by `owner_uid` (a sandbox uid).
Result<UniqueFd> open_write(const Sandbox& sb, const std::string& path, uint32_t owner_uid);

Result<EntryInfo> stat(const Sandbox& sb, const std::string& path);
// An O_PATH handle of a directory, e.g. to watch it through /proc/self/fd/N.
Result<UniqueFd> open_dir(const Sandbox& sb, const std::string& path);
// depth >= 1; depth 1 lists direct children only.
Result<std::vector<EntryInfo>> list_dir(const Sandbox& sb, const std::string& path, int depth);
// Creates parents as needed; EEXIST if `path` already exists.
Status make_dir(const Sandbox& sb, const std::string& path, uint32_t owner_uid);
// A symlink at `path` (parents created as needed) pointing at `target`, as is.
Status make_symlink(const Sandbox& sb, const std::string& path, const std::string& target,
                    uint32_t owner_uid);
Status move(const Sandbox& sb, const std::string& from, const std::string& to);
// Removes a file or a whole directory tree.
Status remove(const Sandbox& sb, const std::string& path);

// Resolve a user-given path: relative paths are taken from `home`, "~" expands to it.
std::string absolute_path(const std::string& path, const std::string& home);

}  // namespace abx::runtime::sandbox_fs
