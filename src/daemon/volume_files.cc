#include "daemon/volume_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "common/ids.h"
#include "runtime/fs_ops.h"

namespace abx::daemon::volume_files {
namespace {

namespace fs_ops = runtime::fs_ops;

constexpr uint32_t kIdsPerRange = 65536;
constexpr uint32_t kNobody = 65534;
constexpr uint32_t kUser = 1000;  // the owner of what the API makes when the request names none
constexpr int kMaxDepth = 16;
constexpr size_t kMaxEntries = 100000;

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string base_name(const std::string& path) {
  if (path == "/") return "/";
  return path.substr(path.rfind('/') + 1);
}

std::string parent_of(const std::string& path) {
  const size_t at = path.rfind('/');
  return at == 0 ? "/" : path.substr(0, at);
}

const char* type_of(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  return "unknown";
}

Error refused(const std::string& path, const std::string& why, int errnum) {
  return Error::with_message("path " + path + ": " + why, errnum);
}

}  // namespace

std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

Result<Tree> Tree::open(const Volumes& volumes, const std::string& id) {
  auto root = volumes.open_root(id);
  if (!root) return root.error();
  return Tree(std::move(*root), volumes.owners());
}

Result<uint32_t> Tree::host_uid(uint32_t uid) const {
  if (uid >= kIdsPerRange) return Error::with_message("uid: must be below 65536", kErrBadInput);
  return owners_.host_uid(uid);
}

Result<uint32_t> Tree::host_gid(uint32_t gid) const {
  if (gid >= kIdsPerRange) return Error::with_message("gid: must be below 65536", kErrBadInput);
  return owners_.host_gid(gid);
}

Entry Tree::describe(const struct stat& st, int fd, const std::string& path) const {
  Entry e;
  e.path = path;
  e.name = base_name(path);
  e.type = type_of(st.st_mode);
  e.size = static_cast<uint64_t>(st.st_size);
  e.mode = st.st_mode & 07777;
  const uid_t uid0 = owners_.host_uid(0);
  const gid_t gid0 = owners_.host_gid(0);
  e.uid = st.st_uid >= uid0 && st.st_uid - uid0 < kIdsPerRange ? st.st_uid - uid0 : kNobody;
  e.gid = st.st_gid >= gid0 && st.st_gid - gid0 < kIdsPerRange ? st.st_gid - gid0 : kNobody;
  e.atime = st.st_atim;
  e.mtime = st.st_mtim;
  e.ctime = st.st_ctim;
  if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(fd, "", buf, sizeof buf);
    if (n >= 0) e.target = std::string(buf, static_cast<size_t>(n));
  }
  return e;
}

Result<Entry> Tree::stat(const std::string& path) const {
  auto handle = fs_ops::resolve(root_.get(), path, O_PATH | O_NOFOLLOW, "stat");
  if (!handle) return handle.error();
  struct stat st {};
  if (::fstatat(handle->get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("stat", path);
  return describe(st, handle->get(), path);
}

Result<std::vector<Entry>> Tree::list(const std::string& path, int depth) const {
  if (depth < 1 || depth > kMaxDepth)
    return Error::with_message("depth: must be from 1 to 16", kErrBadInput);
  std::vector<Entry> out;
  // Each directory is opened from the one above it by a plain name without
  // following links, so a link swapped in meanwhile is not entered.
  auto walk = [&](auto& self, int dir_fd, const std::string& dir_path, int left) -> Status {
    UniqueFd listing(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!listing.valid()) return Error::from_errno("list", dir_path);
    DIR* dir = ::fdopendir(listing.get());
    if (dir == nullptr) return Error::from_errno("list", dir_path);
    (void)listing.release();
    std::vector<std::string> names;
    while (const dirent* d = ::readdir(dir)) {
      const std::string name = d->d_name;
      if (name != "." && name != "..") names.push_back(name);
      // Before they are sorted: a sandbox may put millions in one directory.
      if (out.size() + names.size() > kMaxEntries) {
        ::closedir(dir);
        return Error::with_message("list: more than 100000 entries", kErrTooLarge);
      }
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      if (out.size() >= kMaxEntries)
        return Error::with_message("list: more than 100000 entries", kErrTooLarge);
      UniqueFd child(::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (!child.valid()) continue;  // gone meanwhile
      struct stat st {};
      if (::fstatat(child.get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string child_path = join(dir_path, name);
      out.push_back(describe(st, child.get(), child_path));
      if (left > 1 && S_ISDIR(st.st_mode))
        if (Status s = self(self, child.get(), child_path, left - 1); !s) return s;
    }
    return {};
  };
  auto dir = fs_ops::resolve(root_.get(), path, O_PATH | O_DIRECTORY, "list");
  if (!dir) return dir.error();
  if (Status s = walk(walk, dir->get(), path, depth); !s) return s.error();
  return out;
}

// Owner and mode set through the fd of what was made (a name is never looked
// up again). A link keeps its mode (Linux has none).
Status Tree::apply(int fd, bool is_link, const Metadata& meta, const std::string& path) const {
  if (meta.uid || meta.gid) {
    auto st = stat(path);
    if (!st) return st.error();
    auto uid = host_uid(meta.uid.value_or(st->uid));
    if (!uid) return uid.error();
    auto gid = host_gid(meta.gid.value_or(st->gid));
    if (!gid) return gid.error();
    if (::fchownat(fd, "", *uid, *gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno("chown", path);
  }
  if (meta.mode && !is_link) {
    if (*meta.mode > 07777) return Error::with_message("mode: must be at most 07777", kErrBadInput);
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::chmod(self.c_str(), *meta.mode) != 0) return Error::from_errno("chmod", path);
  }
  return {};
}

Result<Entry> Tree::make_dir(const std::string& path, bool parents, const Metadata& meta) const {
  if (path == "/") {
    if (parents) return stat(path);
    return refused(path, "already exists", EEXIST);
  }
  if (meta.mode && *meta.mode > 07777)
    return Error::with_message("mode: must be at most 07777", kErrBadInput);
  const Metadata made{meta.uid.value_or(kUser), meta.gid.value_or(kUser), meta.mode.value_or(0755)};
  // Without `parents` only the last component is made, in its parent as
  // resolved; with it, each missing one in the directory resolved above it.
  std::string at = parents ? "/" : parent_of(path);
  auto dir = fs_ops::resolve(root_.get(), at, O_PATH | O_DIRECTORY, "mkdir");
  if (!dir) {
    if (dir.error().errnum == ENOENT) return refused(at, "not found (make it first)", ENOENT);
    return dir.error();
  }
  const std::string rest = parents ? path.substr(1) : base_name(path);
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t end = std::min(rest.find('/', start), rest.size());
    const std::string name = rest.substr(start, end - start);
    const bool last = end == rest.size();
    start = end + 1;
    at = join(at, name);
    const bool made_here = ::mkdirat(dir->get(), name.c_str(), 0700) == 0;
    if (!made_here && errno != EEXIST) return Error::from_errno("mkdir", at);
    if (!made_here && last && !parents) return refused(at, "already exists", EEXIST);
    // A link a sandbox put here resolves inside the volume.
    auto next = fs_ops::resolve(root_.get(), at, O_PATH | O_DIRECTORY, "mkdir");
    if (!next) {
      if (next.error().errnum == ENOTDIR)
        return refused(at, "exists and is not a directory", EEXIST);
      return next.error();
    }
    if (made_here)
      if (Status s = apply(next->get(), false, made, at); !s) return s.error();
    dir = std::move(next);
  }
  return stat(path);
}

Status Tree::remove(const std::string& path) const {
  if (path == "/") return refused(path, "the volume's root cannot be removed", kErrBadInput);
  return fs_ops::remove(root_.get(), path);
}

Result<Entry> Tree::set_metadata(const std::string& path, const Metadata& meta) const {
  auto handle = fs_ops::resolve(root_.get(), path, O_PATH | O_NOFOLLOW, "update");
  if (!handle) return handle.error();
  struct stat st {};
  if (::fstatat(handle->get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("stat", path);
  if (Status s = apply(handle->get(), S_ISLNK(st.st_mode), meta, path); !s) return s.error();
  return stat(path);
}

Result<UniqueFd> Tree::open_read(const std::string& path) const {
  return fs_ops::open_regular(root_.get(), path);
}

Result<Tree::Upload> Tree::begin_upload(const std::string& path, bool replace) const {
  if (path == "/") return refused(path, "is a directory", EISDIR);
  auto parent = fs_ops::resolve(root_.get(), parent_of(path), O_PATH | O_DIRECTORY, "upload");
  if (!parent) {
    if (parent.error().errnum == ENOENT || parent.error().errnum == ENOTDIR)
      return refused(path, "its directory does not exist (make it first)", ENOENT);
    return parent.error();
  }
  Upload up;
  up.name = base_name(path);
  up.path = path;
  up.replace = replace;
  struct stat st {};
  if (::fstatat(parent->get(), up.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) return refused(path, "is a directory", EEXIST);
    if (!replace) return refused(path, "already exists (write with force to replace it)", EEXIST);
    if (S_ISREG(st.st_mode)) up.replaced_bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  }
  // openat on a plain name in a resolved directory: the temp name is new,
  // O_EXCL | O_NOFOLLOW, so no link of a sandbox is ever written through.
  UniqueFd dir(::openat(parent->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::from_errno("upload", path);
  up.temp = ".abx-upload-" + ids::random_hex(8);
  up.file = UniqueFd(::openat(dir.get(), up.temp.c_str(),
                              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!up.file.valid()) return Error::from_errno("upload", path);
  up.parent = std::move(dir);
  return up;
}

Result<Entry> Tree::commit_upload(Upload& up, const Metadata& meta) const {
  auto uid = host_uid(meta.uid.value_or(kUser));
  if (!uid) return uid.error();
  auto gid = host_gid(meta.gid.value_or(kUser));
  if (!gid) return gid.error();
  const uint32_t mode = meta.mode.value_or(0644);
  if (mode > 07777) return Error::with_message("mode: must be at most 07777", kErrBadInput);
  if (::fchown(up.file.get(), *uid, *gid) != 0 || ::fchmod(up.file.get(), mode) != 0)
    return Error::from_errno("upload", up.path);
  const unsigned flags = up.replace ? 0 : RENAME_NOREPLACE;
  if (::renameat2(up.parent.get(), up.temp.c_str(), up.parent.get(), up.name.c_str(), flags) != 0)
    return Error::from_errno("upload", up.path);
  up.temp.clear();
  return stat(up.path);
}

void Tree::abort_upload(Upload& up) {
  if (up.parent.valid() && !up.temp.empty()) ::unlinkat(up.parent.get(), up.temp.c_str(), 0);
  up.temp.clear();
}

}  // namespace abx::daemon::volume_files
