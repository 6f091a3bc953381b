// File operations inside a sandbox, for the daemon: the files API, watches,
// template COPY. Each runs inside the sandbox's walls, in a worker its init
// forks (Sandbox::file_op): in its namespaces and memory cgroup, as a
// sandbox user, never as host root on a host path. A sandbox whose init
// predates file workers (adopted from an older daemon), and test doubles,
// are served from the host instead: with the user's filesystem ids, every
// path resolved under the sandbox's root fd (runtime/fs_ops.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/file_request.h"
#include "runtime/runtime.h"

namespace abx::runtime::fs_ops {
struct CreatedFile;
}

namespace abx::runtime::sandbox_fs {

using runtime::EntryInfo;
using runtime::FileType;

// Errors carry errno: ENOENT → not found, EEXIST → already exists,
// ENOTDIR/EISDIR → invalid argument, ENOSPC/EDQUOT → out of disk.

// Open for reading a regular file on behalf of sandbox uid/gid: the
// sandbox's init opens it with that user's ids, so a file the user could not
// read inside the sandbox is refused (EACCES) here too. Files on /proc or
// /sys, devices, FIFOs and sockets are refused (EPERM / EINVAL), directories
// are EISDIR.
Result<UniqueFd> open_read_as(const Sandbox& sb, const std::string& path, uint32_t uid,
                              uint32_t gid);

// A file being written: the bytes go through a pipe to the worker inside
// the sandbox, which writes them as the file's owner (charged to the
// sandbox). write() and finish() block, at most about a minute when the
// sandbox stops taking data. Dropped without a successful finish(), the file
// is removed (by the worker, as the user it wrote as); the destructor never
// blocks.
class FileWriter {
 public:
  struct Target {
    const Sandbox* sandbox;
    std::string path;
    uint32_t owner_uid;
    uint32_t mode;
    std::map<std::string, std::string> metadata;  // set when served from the host
  };
  FileWriter(Target target, FileResult io);                                 // through a worker
  FileWriter(Target target, std::unique_ptr<fs_ops::CreatedFile> on_host);  // served from the host
  FileWriter(FileWriter&&) noexcept;
  FileWriter& operator=(FileWriter&&) = delete;
  ~FileWriter();

  Status write(std::string_view data);
  // The file complete and synced, every byte sent accounted for.
  Status finish();
  // Drops the unfinished file and waits (up to the worker's answer timeout)
  // until it is gone, so that an answer sent next is never overtaken by a
  // file still there. The destructor drops it without waiting.
  void abandon();

 private:
  Error stopped(const Error& error);
  Target target_;
  FileResult io_;  // data: the pipe to the worker; session: the worker's answers
  std::unique_ptr<fs_ops::CreatedFile> on_host_;
  uint64_t sent_ = 0;
  bool done_ = false;
};

// Creates or truncates a regular file for writing, creating missing parent
// directories, all owned by `owner_uid` (a sandbox uid), as that user; sets
// `mode` once written (0: 0644) and `metadata` as its whole envd metadata
// (user.e2b.* xattrs; keys and values checked by the caller). Refused before
// a byte is written for a /proc or /sys file, a device, FIFO or socket.
Result<FileWriter> start_write(const Sandbox& sb, const std::string& path, uint32_t owner_uid,
                               uint32_t mode = 0, std::map<std::string, std::string> metadata = {});

Result<EntryInfo> stat(const Sandbox& sb, const std::string& path);
// An O_PATH handle of a directory, e.g. to watch it through /proc/self/fd/N.
Result<UniqueFd> open_dir(const Sandbox& sb, const std::string& path);
// depth >= 1; depth 1 lists direct children only. Sorted as a depth-first
// walk in name order (each directory's children right after it).
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
