// File operations relative to a root directory fd, with the caller's own
// credentials. Every lookup that crosses more than one path component goes
// through openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so ".." and
// symlinks (absolute or relative) resolve as they would with that root as
// "/" and never leave it; operations on a final component (mkdir, rename,
// unlink) act on a plain name relative to a directory fd resolved that way.
//
// Used by abx-init's file workers (root "/", inside the sandbox, as the
// requested user) and, for sandboxes whose init predates them, by the
// daemon against the sandbox's root as the host sees it.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/file_request.h"

namespace abx::runtime::fs_ops {

// Which owner ids EntryInfo names "root" and "user" (others are numbers).
struct Owners {
  uid_t root_uid = 0, user_uid = 1000;
  gid_t root_gid = 0, user_gid = 1000;
};

// Errors carry errno: ENOENT → not found, EEXIST → already exists,
// ENOTDIR/EISDIR → invalid argument, ENOSPC/EDQUOT → out of disk.
// Paths are absolute and normalised (see absolute_path).

Result<UniqueFd> resolve(int root, const std::string& path, uint64_t flags, const char* step,
                         uint64_t mode = 0);
Result<EntryInfo> stat(int root, const std::string& path, const Owners& owners);
// depth >= 1; depth 1 lists direct children only.
Result<std::vector<EntryInfo>> list(int root, const std::string& path, int depth,
                                    const Owners& owners);
// Called where the acting user may not create a missing directory (EACCES
// or EPERM): makes `name` in `parent` by other means, or fails. See the file
// worker, which does what envd does there.
using MakeDenied = Status (*)(int parent, const std::string& name, const std::string& path);
// mkdir -p: every missing component made (0755); `on_denied` where the
// user may not.
Status make_dir(int root, const std::string& path, MakeDenied on_denied = nullptr);
Status make_symlink(int root, const std::string& path, const std::string& target);
Status move(int root, const std::string& from, const std::string& to);
Status remove(int root, const std::string& path);
// A regular file created (0644) or truncated for writing, parents made
// (0755). Refused before a byte is written when the opened file is on /proc
// or /sys, a device, FIFO or socket (see proto::check_readable_file).
// With `may_replace`, an existing regular file of the same owner (one name,
// not a symlink) is not truncated: the data goes to an unnamed file in its
// directory (its mode and group copied) that commit_created puts in its place,
// so an upload that fails keeps the old content whole.
struct CreatedFile {
  UniqueFd file;
  UniqueFd parent;  // the directory it was made in (O_PATH), and its name there
  std::string name;
  bool replaces = false;  // `file` is unnamed until commit_created
};
Result<CreatedFile> create_file(int root, const std::string& path, bool may_replace = false,
                                MakeDenied on_denied = nullptr);
// Once the data is synced: a replacement renamed over the old file. Nothing
// for a file written in place.
Status commit_created(const CreatedFile& created, const std::string& path);
// Removes a file create_file made, by its name in that directory, if the
// name still is that file: a link swapped in meanwhile is left alone. A
// replacement not committed just goes with its fd: the old file stays.
void remove_created(const CreatedFile& created);
// A regular file (not /proc, /sys, a device, FIFO or socket) opened O_RDONLY.
Result<UniqueFd> open_regular(int root, const std::string& path);
Result<UniqueFd> open_dir(int root, const std::string& path);

// envd's metadata of the file or directory `fd` (may be O_PATH) is open on:
// its user.e2b.* xattrs, prefix stripped. Empty when it has none or its
// filesystem keeps no xattrs.
std::map<std::string, std::string> read_metadata(int fd);
// Makes `metadata` the file's whole metadata, as envd does on every upload:
// keys not in it are removed. A filesystem without user xattrs is no error.
Status write_metadata(int fd, const std::map<std::string, std::string>& metadata,
                      const std::string& path);

// A user-given path made absolute and normalised: relative paths are taken
// from `home`, "~" expands to it, "." and empty components go.
std::string absolute_path(const std::string& path, const std::string& home);

}  // namespace abx::runtime::fs_ops
