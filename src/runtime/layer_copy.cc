#include "runtime/layer_copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <climits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.h"

namespace abx::runtime::layer_copy {
namespace {

constexpr size_t kChunk = 1 << 20;
constexpr size_t kMaxXattrList = 64 * 1024;
constexpr size_t kMaxXattrValue = 64 * 1024;
// The paths kept for hard-linked files (to link their other names to): a
// layer of a million links deep down would otherwise hold gigabytes of them.
constexpr size_t kMaxLinkedPathBytes = 16u << 20;

struct Walk {
  const Limits& limits;
  Copied copied;
  dev_t layer_dev = 0;
  int to_root = -1;
  // Inodes with more than one link already copied: their path in the copy.
  std::map<std::pair<dev_t, ino_t>, std::string> linked;
  size_t linked_bytes = 0;
  std::vector<char> buffer = std::vector<char>(kChunk);
};

// The owner a copy gets (see Limits::owners).
void store_owners(const Limits& limits, struct stat* st) {
  if (!limits.owners) return;
  const auto& [layer, stored] = *limits.owners;
  if (auto uid = layer.sandbox_uid(st->st_uid)) st->st_uid = stored.host_uid(*uid);
  if (auto gid = layer.sandbox_gid(st->st_gid)) st->st_gid = stored.host_gid(*gid);
}

Error too_big(const std::string& what) { return Error{"copy the writable layer", E2BIG, what}; }

struct DirClose {
  void operator()(DIR* d) const { ::closedir(d); }
};
using DirStream = std::unique_ptr<DIR, DirClose>;

// The names of `dir` are read as the walk goes, not gathered first: a
// directory of millions of empty files (cheap on a tmpfs) costs no memory
// here, and the entry limit stops the walk on the way.
Result<DirStream> open_stream(int dir) {
  const int dup = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return Error::from_errno("dup layer dir");
  DirStream stream(::fdopendir(dup));
  if (!stream) {
    ::close(dup);
    return Error::from_errno("read layer dir");
  }
  return stream;
}

// user.* only: overlay's opaque and redirect marks under userxattr, envd's
// metadata. trusted.* and security.* are not the sandbox's to carry over.
Status copy_xattrs(int from, int to) {
  std::string list(kMaxXattrList, '\0');
  const ssize_t n = ::flistxattr(from, list.data(), list.size());
  if (n < 0)
    return errno == ENOTSUP || errno == ERANGE ? Status{} : Error::from_errno("list xattrs");
  std::string value(kMaxXattrValue, '\0');
  for (size_t at = 0; at < static_cast<size_t>(n);) {
    const std::string name = list.c_str() + at;
    at += name.size() + 1;
    if (name.rfind("user.", 0) != 0) continue;
    const ssize_t size = ::fgetxattr(from, name.c_str(), value.data(), value.size());
    if (size < 0) continue;  // gone meanwhile, or too big: left out
    if (::fsetxattr(to, name.c_str(), value.data(), static_cast<size_t>(size), 0) != 0)
      return Error::from_errno("set xattr", name);
  }
  return {};
}

// Owner, then mode (a chown clears set-id bits), then times.
Status copy_attributes(const Limits& limits, int to, struct stat st) {
  store_owners(limits, &st);
  if (::fchown(to, st.st_uid, st.st_gid) != 0) return Error::from_errno("chown copy");
  if (::fchmod(to, st.st_mode & 07777) != 0) return Error::from_errno("chmod copy");
  const timespec times[2] = {st.st_atim, st.st_mtim};
  if (::futimens(to, times) != 0) return Error::from_errno("set times of copy");
  return {};
}

// Data extents only: a sparse file's holes stay holes, so a huge sparse
// file costs what it holds, and that counts against the byte limit.
Status copy_data(Walk& walk, int from, int to, off_t size) {
  off_t at = 0;
  while (at < size) {
    const off_t data = ::lseek(from, at, SEEK_DATA);
    if (data < 0) break;  // ENXIO: only a hole is left
    off_t hole = ::lseek(from, data, SEEK_HOLE);
    if (hole < 0 || hole > size) hole = size;
    for (off_t pos = data; pos < hole;) {
      const size_t want = static_cast<size_t>(std::min<off_t>(hole - pos, kChunk));
      if (walk.copied.bytes + want > walk.limits.max_bytes)
        return too_big("more than " + std::to_string(walk.limits.max_bytes) + " bytes");
      const ssize_t got = ::pread(from, walk.buffer.data(), want, pos);
      if (got < 0) return Error::from_errno("read layer file");
      if (got == 0) return {};  // shrank meanwhile
      if (::pwrite(to, walk.buffer.data(), static_cast<size_t>(got), pos) != got)
        return Error::from_errno("write snapshot file");
      pos += got;
      walk.copied.bytes += static_cast<uint64_t>(got);
    }
    at = hole;
  }
  if (::ftruncate(to, size) != 0) return Error::from_errno("size snapshot file");
  return {};
}

Status copy_file(Walk& walk, int from_dir, int to_dir, const std::string& name,
                 const struct stat& st, const std::string& rel) {
  const auto key = std::pair{st.st_dev, st.st_ino};
  if (st.st_nlink > 1) {
    if (auto seen = walk.linked.find(key); seen != walk.linked.end()) {
      if (::linkat(walk.to_root, seen->second.c_str(), to_dir, name.c_str(), 0) != 0)
        return Error::from_errno("link in snapshot", rel);
      return {};
    }
  }
  UniqueFd in(
      ::openat(from_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!in.valid()) return errno == ENOENT ? Status{} : Error::from_errno("open layer file", rel);
  struct stat opened {};
  if (::fstat(in.get(), &opened) != 0) return Error::from_errno("stat layer file", rel);
  if (!S_ISREG(opened.st_mode) || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev)
    return {};  // replaced meanwhile: not what we stat'ed
  UniqueFd out(
      ::openat(to_dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid()) return Error::from_errno("create snapshot file", rel);
  if (Status s = copy_data(walk, in.get(), out.get(), opened.st_size); !s) return s;
  if (Status s = copy_xattrs(in.get(), out.get()); !s) return s;
  if (Status s = copy_attributes(walk.limits, out.get(), opened); !s) return s;
  if (opened.st_nlink > 1) {
    walk.linked_bytes += rel.size();
    if (walk.linked_bytes > kMaxLinkedPathBytes) return too_big("too many hard-linked files");
    walk.linked.emplace(key, rel);
  }
  return {};
}

Status copy_symlink(int from_dir, int to_dir, const std::string& name, const struct stat& st,
                    const std::string& rel) {
  char target[PATH_MAX];
  const ssize_t n = ::readlinkat(from_dir, name.c_str(), target, sizeof target);
  if (n < 0) return errno == ENOENT ? Status{} : Error::from_errno("read layer symlink", rel);
  if (static_cast<size_t>(n) >= sizeof target) return {};  // cannot be a valid link
  if (::symlinkat(std::string(target, static_cast<size_t>(n)).c_str(), to_dir, name.c_str()) != 0)
    return Error::from_errno("create snapshot symlink", rel);
  if (::fchownat(to_dir, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("chown snapshot symlink", rel);
  const timespec times[2] = {st.st_atim, st.st_mtim};
  (void)::utimensat(to_dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW);
  return {};
}

// A FIFO, or an overlay whiteout (a 0/0 character device); nothing else.
Status copy_node(int to_dir, const std::string& name, const struct stat& st,
                 const std::string& rel) {
  const bool whiteout = S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
  if (!whiteout && !S_ISFIFO(st.st_mode)) return {};
  const mode_t type = whiteout ? S_IFCHR : S_IFIFO;
  if (::mknodat(to_dir, name.c_str(), type | 0600, 0) != 0)
    return Error::from_errno("create snapshot node", rel);
  if (::fchownat(to_dir, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("chown snapshot node", rel);
  // Neither follows a symlink: the name is a node we just made.
  if (::fchmodat(to_dir, name.c_str(), st.st_mode & 0777, 0) != 0)
    return Error::from_errno("chmod snapshot node", rel);
  return {};
}

Status copy_dir(Walk& walk, int from, int to, int depth, const std::string& rel);

Status copy_subdir(Walk& walk, int from_dir, int to_dir, const std::string& name,
                   const struct stat& st, int depth, const std::string& rel) {
  if (depth >= walk.limits.max_depth)
    return too_big("directories nested deeper than " + std::to_string(walk.limits.max_depth));
  UniqueFd in(::openat(from_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return errno == ENOENT ? Status{} : Error::from_errno("open layer dir", rel);
  struct stat opened {};
  if (::fstat(in.get(), &opened) != 0 || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev)
    return {};
  if (::mkdirat(to_dir, name.c_str(), 0700) != 0)
    return Error::from_errno("create snapshot dir", rel);
  UniqueFd out(::openat(to_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!out.valid()) return Error::from_errno("open snapshot dir", rel);
  if (Status s = copy_dir(walk, in.get(), out.get(), depth + 1, rel); !s) return s;
  if (Status s = copy_xattrs(in.get(), out.get()); !s) return s;
  return copy_attributes(walk.limits, out.get(), opened);
}

Status copy_dir(Walk& walk, int from, int to, int depth, const std::string& rel) {
  auto stream = open_stream(from);
  if (!stream) return stream.error();
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(stream->get());
    if (entry == nullptr) {
      if (errno != 0) return Error::from_errno("read layer dir", rel);
      return {};
    }
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (++walk.copied.entries > walk.limits.max_entries)
      return too_big("more than " + std::to_string(walk.limits.max_entries) + " files");
    const std::string path = rel.empty() ? name : rel + "/" + name;
    struct stat st {};
    if (::fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return Error::from_errno("stat layer entry", path);
    }
    if (st.st_dev != walk.layer_dev) continue;  // a mount point: not the layer's
    store_owners(walk.limits, &st);  // for links and nodes (the others stat what they open)
    Status s;
    if (S_ISDIR(st.st_mode))
      s = copy_subdir(walk, from, to, name, st, depth, path);
    else if (S_ISREG(st.st_mode))
      s = copy_file(walk, from, to, name, st, path);
    else if (S_ISLNK(st.st_mode))
      s = copy_symlink(from, to, name, st, path);
    else
      s = copy_node(to, name, st, path);
    if (!s) return s;
  }
}

}  // namespace

Result<Copied> copy(int from, int to, const Limits& limits) {
  struct stat root {};
  if (::fstat(from, &root) != 0 || !S_ISDIR(root.st_mode))
    return Error{"copy the writable layer", ENOTDIR, "not a directory"};
  Walk walk{limits, {}, root.st_dev, to, {}};

  if (Status s = copy_dir(walk, from, to, 0, ""); !s) return s.error();
  if (Status s = copy_xattrs(from, to); !s) return s.error();
  if (Status s = copy_attributes(limits, to, root); !s) return s.error();
  return walk.copied;
}

}  // namespace abx::runtime::layer_copy
