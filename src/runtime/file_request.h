// One file operation done inside a sandbox for the daemon (the files API,
// watches, template COPY), and what it answers. Compiled into both the
// runtime and abx-init; nothing here may depend on the daemon.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace abx::runtime {

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
  // Symlinks only, as envd reports them: the target's absolute path with
  // every link resolved (the link's own path when it dangles), and the type
  // and permission bits of what it points at (kOther, 0 when it dangles).
  std::string symlink_target;
  FileType target_type = FileType::kOther;
  uint32_t target_mode = 0;
  // envd's file metadata: the `user.e2b.<key>` xattrs of the file (of a
  // symlink's target), prefix stripped; entries that are not UTF-8 are left out.
  std::map<std::string, std::string> metadata;
};

// Where envd keeps a file's metadata (X-Metadata-<key> on upload).
inline constexpr const char* kMetadataXattrPrefix = "user.e2b.";

enum class FileOp : uint8_t {
  kStat = 1,     // entries: the one entry at `path` (a symlink itself, not its target)
  kList = 2,     // entries: everything under `path`, `depth` levels down
  kMakeDir = 3,  // `path` and missing parents (EEXIST if `path` exists)
  kSymlink = 4,  // a symlink at `path` pointing at `other`, parents made
  kMove = 5,     // `path` renamed to `other`
  kRemove = 6,   // `path`, a whole tree if a directory
  kWrite = 7,    // `path` created or truncated (parents made, then `mode`), filled from a pipe
  kOpenDir = 8,  // fd: `path` as an O_PATH directory handle
  // Over TCP only (where no fd can travel): the regular file at `path`'s
  // bytes, in FileReply::data pieces, the last reply with the total written.
  kReadFile = 9,
};

// Every path is absolute and normalised, resolved as if the sandbox's root
// were "/"; the operation runs with the ids of sandbox user `uid`/`gid`.
struct FileRequest {
  FileOp op = FileOp::kStat;
  std::string path;
  std::string other;  // kSymlink: the target, as is; kMove: the destination
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t depth = 1;  // kList, at least 1
  uint32_t mode = 0;   // kWrite: permission bits to set; 0 keeps 0644
  // kWrite: the file's metadata afterwards (what it had before is cleared,
  // as envd does on every upload), already checked by the daemon.
  std::map<std::string, std::string> metadata;
};

// The Error detail of a file_op that this sandbox cannot run (ENOSYS): its
// init predates file workers, or it is a test double.
inline constexpr const char* kNoFileWorkers = "no file workers";

struct FileResult {
  std::vector<EntryInfo> entries;  // kStat, kList
  UniqueFd fd;                     // kOpenDir
  // kWrite: where the data goes (a pipe into the sandbox, or the file
  // itself), and where the operation's outcome arrives once `data` is closed.
  UniqueFd data;
  UniqueFd session;
};

}  // namespace abx::runtime
