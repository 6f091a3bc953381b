#include "runtime/fs_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string_view>
#include <utility>

#include "agent/protocol.h"

namespace abx::runtime::fs_ops {
namespace {

// openat2 may fail with EAGAIN when a rename races a RESOLVE_IN_ROOT lookup.
constexpr int kOpenat2Retries = 8;

// "/a/b/c" → {"/a/b", "c"}; the path is already absolute and normalised.
std::pair<std::string, std::string> split_last(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {"/", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

bool names_an_entry(const std::string& name) {
  return !name.empty() && name != "." && name != "..";
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// The parent directory (O_PATH) and the final name of `path`, for operations
// that must act on the last component itself rather than on what it points to.
struct ParentAndName {
  UniqueFd parent;
  std::string name;
};

Result<ParentAndName> resolve_parent(int root, const std::string& path, const char* step) {
  auto [parent_path, name] = split_last(path);
  if (!names_an_entry(name)) return Error{step, EINVAL, path};
  auto parent = resolve(root, parent_path, O_PATH | O_DIRECTORY, step);
  if (!parent) return parent.error();
  return ParentAndName{std::move(parent.value()), std::move(name)};
}

// Turns a checked O_PATH handle into an open file. /proc/self/fd reopens the
// very inode that was checked, so swapping the path for a FIFO or a device
// after the check changes nothing.
Result<UniqueFd> reopen(int path_fd, int flags, const char* step, const std::string& path) {
  const std::string self = "/proc/self/fd/" + std::to_string(path_fd);
  const int fd = ::open(self.c_str(), flags | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Error::from_errno(step, path);
  return UniqueFd(fd);
}

// mkdirat(parent, name, 0755), or `on_denied` where permission is refused.
Status make_one(int parent, const std::string& name, const std::string& path,
                MakeDenied on_denied) {
  if (::mkdirat(parent, name.c_str(), 0755) == 0) return {};
  const int err = errno;
  if ((err == EACCES || err == EPERM) && on_denied != nullptr) return on_denied(parent, name, path);
  return Error{"mkdir", err, path};
}

// mkdir -p of every component of `dir`, 0755. Returns the final dir.
Result<UniqueFd> make_parents(int root, const std::string& dir, MakeDenied on_denied) {
  auto current = resolve(root, "/", O_PATH | O_DIRECTORY, "open");
  if (!current) return current.error();
  size_t start = 1;
  while (start < dir.size()) {
    const size_t end = std::min(dir.find('/', start), dir.size());
    const std::string prefix = dir.substr(0, end);
    const std::string name = dir.substr(start, end - start);
    start = end + 1;
    auto next = resolve(root, prefix, O_PATH | O_DIRECTORY, "open");
    if (!next && next.error().errnum == ENOENT && names_an_entry(name)) {
      if (auto made = make_one(current->get(), name, prefix, on_denied);
          !made && made.error().errnum != EEXIST)
        return made.error();
      next = resolve(root, prefix, O_PATH | O_DIRECTORY, "open");
    }
    if (!next) return next.error();
    current = std::move(next);
  }
  return current;
}

std::string owner_name(unsigned id, unsigned root, unsigned user) {
  if (id == root) return "root";
  if (id == user) return "user";
  return std::to_string(id);
}

FileType type_of(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kFile;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  return FileType::kOther;
}

// Bounds what one entry's metadata adds to a reply (envd itself accepts at
// most 4 KiB per file; more can only have been set from inside).
constexpr size_t kMaxMetadataBytes = 16 * 1024;

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xE  ? 3
                     : (c >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += n;
  }
  return true;
}

// The names of the xattrs on `fd` (flistxattr, or listxattr through /proc for
// an O_PATH handle), split at their NULs.
std::vector<std::string> xattr_names(int fd, bool path_handle) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  const auto list = [&](char* buffer, size_t size) {
    return path_handle ? ::listxattr(self.c_str(), buffer, size) : ::flistxattr(fd, buffer, size);
  };
  std::vector<std::string> names;
  const ssize_t size = list(nullptr, 0);  // most files have none: no buffer then
  if (size <= 0) return names;
  std::string buffer(std::min<size_t>(static_cast<size_t>(size) + 256, XATTR_LIST_MAX), '\0');
  const ssize_t n = list(buffer.data(), buffer.size());
  for (size_t at = 0; n > 0 && at < static_cast<size_t>(n);) {
    const size_t end = buffer.find('\0', at);
    if (end == std::string::npos) break;
    names.push_back(buffer.substr(at, end - at));
    at = end + 1;
  }
  return names;
}

std::string fd_path(int fd) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlink(self.c_str(), target.data(), target.size());
  target.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return target;
}

// Where `fd` is, as a path from `root` ("/" inside a sandbox's worker; from
// the host, the sandbox root's own path is taken off).
std::string path_in_root(int root, int fd) {
  const std::string root_path = fd_path(root);
  std::string path = fd_path(fd);
  if (root_path == "/" || root_path.empty()) return path;
  if (path == root_path) return "/";
  if (path.starts_with(root_path + "/")) return path.substr(root_path.size());
  return path;
}

// As envd (filepath.EvalSymlinks, then os.Stat): the target resolved inside
// the root, its type and permission bits, and its metadata.
void describe_link_target(int root, const std::string& path, EntryInfo& info) {
  info.symlink_target = path;  // dangling or a loop: envd names the link itself
  auto target = resolve(root, path, O_PATH, "stat");
  if (!target) return;
  struct stat st {};
  if (::fstat(target->get(), &st) != 0) return;
  info.symlink_target = path_in_root(root, target->get());
  info.target_type = type_of(st.st_mode);
  info.target_mode = st.st_mode & 0777;
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) info.metadata = read_metadata(target->get());
}

// `name` relative to `dir_fd`, or the fd itself when `name` is "".
EntryInfo describe(int root, const Owners& owners, const struct stat& st, int dir_fd,
                   const char* name, const std::string& path) {
  EntryInfo info;
  info.name = path == "/" ? "/" : split_last(path).second;
  info.path = path;
  info.type = type_of(st.st_mode);
  info.size = static_cast<uint64_t>(st.st_size);
  info.mode = st.st_mode & 07777;
  info.owner = owner_name(st.st_uid, owners.root_uid, owners.user_uid);
  info.group = owner_name(st.st_gid, owners.root_gid, owners.user_gid);
  info.mtime_sec = st.st_mtim.tv_sec;
  info.mtime_nsec = st.st_mtim.tv_nsec;
  if (S_ISLNK(st.st_mode)) {
    describe_link_target(root, path, info);
  } else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {  // only these hold user xattrs
    if (*name == '\0') {
      info.metadata = read_metadata(dir_fd);
    } else if (UniqueFd fd(::openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)); fd.valid()) {
      info.metadata = read_metadata(fd.get());
    }
  }
  return info;
}

// Calls `visit(name)` for each entry of the open directory except . and ..
template <class Visit>
Status for_each_entry(int dir_fd, const char* step, const std::string& path, Visit&& visit) {
  const int own_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own_fd < 0) return Error::from_errno(step, path);
  DIR* dir = ::fdopendir(own_fd);
  if (dir == nullptr) {
    ::close(own_fd);
    return Error::from_errno(step, path);
  }
  Status status;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    status = visit(std::string(name));
    if (!status) break;
    errno = 0;
  }
  if (status && errno != 0) status = Error::from_errno(step, path);
  ::closedir(dir);
  return status;
}

// Opens a child directory by plain name without following a symlink.
Result<UniqueFd> open_child_dir(int dir_fd, const std::string& name, const char* step,
                                const std::string& path) {
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error::from_errno(step, path);
  return UniqueFd(fd);
}

Status list_into(int root, const Owners& owners, int dir_fd, const std::string& dir_path, int depth,
                 std::vector<EntryInfo>& out) {
  return for_each_entry(dir_fd, "list", dir_path, [&](const std::string& name) -> Status {
    const std::string path = join(dir_path, name);
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return {};  // removed while we listed
      return Error::from_errno("stat", path);
    }
    out.push_back(describe(root, owners, st, dir_fd, name.c_str(), path));
    if (depth <= 1 || !S_ISDIR(st.st_mode)) return {};
    auto child = open_child_dir(dir_fd, name, "list", path);
    if (!child) return child.error();
    return list_into(root, owners, child->get(), path, depth - 1, out);
  });
}

Status remove_tree_contents(int dir_fd, const std::string& dir_path) {
  return for_each_entry(dir_fd, "remove", dir_path, [&](const std::string& name) -> Status {
    const std::string path = join(dir_path, name);
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0) return {};
    if (errno != EISDIR) return Error::from_errno("remove", path);
    auto child = open_child_dir(dir_fd, name, "remove", path);
    if (!child) return child.error();
    if (auto st = remove_tree_contents(child->get(), path); !st) return st;
    if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0)
      return Error::from_errno("remove", path);
    return {};
  });
}

}  // namespace

Result<UniqueFd> resolve(int root, const std::string& path, uint64_t flags, const char* step,
                         uint64_t mode) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN || attempt == kOpenat2Retries) return Error::from_errno(step, path);
  }
}

Result<EntryInfo> stat(int root, const std::string& path, const Owners& owners) {
  auto handle = resolve(root, path, O_PATH | O_NOFOLLOW, "stat");
  if (!handle) return handle.error();
  struct stat st {};
  if (::fstatat(handle->get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("stat", path);
  return describe(root, owners, st, handle->get(), "", path);
}

Result<std::vector<EntryInfo>> list(int root, const std::string& path, int depth,
                                    const Owners& owners) {
  if (depth < 1) return Error{"list", EINVAL, "depth must be at least 1"};
  auto dir = resolve(root, path, O_RDONLY | O_DIRECTORY, "list");
  if (!dir) return dir.error();
  std::vector<EntryInfo> entries;
  if (auto st = list_into(root, owners, dir->get(), path, depth, entries); !st) return st.error();
  return entries;
}

Status make_dir(int root, const std::string& path, MakeDenied on_denied) {
  const auto [parent_path, name] = split_last(path);
  if (!names_an_entry(name)) return Error{"mkdir", EEXIST, path};
  auto parent = make_parents(root, parent_path, on_denied);
  if (!parent) return parent.error();
  return make_one(parent->get(), name, path, on_denied);
}

Status make_symlink(int root, const std::string& path, const std::string& target) {
  const auto [parent_path, name] = split_last(path);
  if (!names_an_entry(name)) return Error{"symlink", EEXIST, path};
  auto parent = make_parents(root, parent_path, nullptr);
  if (!parent) return parent.error();
  if (::symlinkat(target.c_str(), parent->get(), name.c_str()) != 0)
    return Error::from_errno("symlink", path);
  return {};
}

Status move(int root, const std::string& from, const std::string& to) {
  auto source = resolve_parent(root, from, "rename");
  if (!source) return source.error();
  auto destination = resolve_parent(root, to, "rename");
  if (!destination) return destination.error();
  if (::renameat2(source->parent.get(), source->name.c_str(), destination->parent.get(),
                  destination->name.c_str(), 0) != 0)
    return Error::from_errno("rename", from + " -> " + to);
  return {};
}

Status remove(int root, const std::string& path) {
  auto target = resolve_parent(root, path, "remove");
  if (!target) return target.error();
  const int parent = target->parent.get();
  const char* name = target->name.c_str();
  if (::unlinkat(parent, name, 0) == 0) return {};
  if (errno != EISDIR) return Error::from_errno("remove", path);
  auto dir = open_child_dir(parent, target->name, "remove", path);
  if (!dir) return dir.error();
  if (auto st = remove_tree_contents(dir->get(), path); !st) return st;
  if (::unlinkat(parent, name, AT_REMOVEDIR) != 0) return Error::from_errno("remove", path);
  return {};
}

namespace {

// A name no file in the directory has yet, for the instant between linking
// the replacement in and renaming it over the old file.
std::string temporary_name() {
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return {};
  std::string name = ".abx-upload-";
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    name += kHex[b >> 4];
    name += kHex[b & 15];
  }
  return name;
}

// Links the unnamed `file` into `dir` under a fresh name: by the fd itself
// where allowed (CAP_DAC_READ_SEARCH), else through /proc/self/fd.
Result<std::string> link_unnamed(int file, int dir, const std::string& path) {
  const std::string self = "/proc/self/fd/" + std::to_string(file);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::string temp = temporary_name();
    if (temp.empty()) return Error::from_errno("getrandom", path);
    if (::linkat(file, "", dir, temp.c_str(), AT_EMPTY_PATH) == 0 ||
        ::linkat(AT_FDCWD, self.c_str(), dir, temp.c_str(), AT_SYMLINK_FOLLOW) == 0)
      return temp;
    if (errno != EEXIST) return Error::from_errno("link the upload", path);
  }
  return Error{"link the upload", EEXIST, path};
}

// An unnamed file to replace `name` with, when one can: see create_file.
UniqueFd open_replacement(int parent, const std::string& name) {
  struct stat old {};
  if (::fstatat(parent, name.c_str(), &old, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(old.st_mode) ||
      old.st_nlink != 1)
    return {};  // a new file, a symlink (followed, in place) or a hard-linked one: in place
  // Only what could be written in place is replaced (by the filesystem ids).
  if (::faccessat(parent, name.c_str(), W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0) return {};
  UniqueFd unnamed(::openat(parent, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  if (!unnamed.valid()) return {};  // no O_TMPFILE there, or no write permission: in place
  struct stat mine {};
  if (::fstat(unnamed.get(), &mine) != 0 || mine.st_uid != old.st_uid)
    return {};  // a replacement would change its owner: in place
  (void)::fchown(unnamed.get(), static_cast<uid_t>(-1), old.st_gid);  // where allowed
  // Set-id bits go, as they do when anyone but root writes the file.
  if (::fchmod(unnamed.get(), old.st_mode & 01777) != 0) return {};
  return unnamed;
}

}  // namespace

// O_NONBLOCK keeps a FIFO planted at the path from blocking the open; the
// check on the opened fd then refuses it, and a /proc or /sys file (say
// /proc/mtrr, through a link the sandbox planted), before a byte is written.
// A link at the final name is followed (inside the root); the parent is
// kept so that an abandoned file can be removed by its name there.
Result<CreatedFile> create_file(int root, const std::string& path, bool may_replace,
                                MakeDenied on_denied) {
  const auto [parent_path, name] = split_last(path);
  if (!names_an_entry(name)) return Error{"open", EISDIR, path};
  auto parent = make_parents(root, parent_path, on_denied);
  if (!parent) return parent.error();
  if (may_replace) {
    if (UniqueFd unnamed = open_replacement(parent->get(), name); unnamed.valid())
      return CreatedFile{std::move(unnamed), std::move(*parent), name, true};
  }
  auto fd = resolve(root, path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY, "open", 0644);
  if (!fd) return fd.error();
  if (auto s = proto::check_readable_file(fd->get(), path); !s) return s.error();
  if (::fcntl(fd->get(), F_SETFL, 0) != 0) return Error::from_errno("open", path);
  // envd chowns every upload to its user before writing: a watcher sees
  // CREATE, CHMOD, WRITE (E2B's SDK tests count them). Giving the file to its
  // own owner changes nothing else; truncating after it keeps that order.
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return Error::from_errno("open", path);
  (void)::fchown(fd->get(), st.st_uid, st.st_gid);  // not the owner (group-writable): no event
  if (st.st_size > 0 && ::ftruncate(fd->get(), 0) != 0) return Error::from_errno("truncate", path);
  return CreatedFile{std::move(*fd), std::move(*parent), name};
}

namespace {

// Watchers see a replacement as a write of the file (E2B's SDKs wait for
// WRITE), as when it was written in place: a same-size truncate is one, done
// through the new name (the unnamed file's own fd would report no name).
void announce_write(const CreatedFile& created) {
  UniqueFd named(::openat(created.parent.get(), created.name.c_str(),
                          O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat file {
  }, at_name{};
  if (!named.valid() || ::fstat(created.file.get(), &file) != 0 ||
      ::fstat(named.get(), &at_name) != 0 || file.st_dev != at_name.st_dev ||
      file.st_ino != at_name.st_ino)
    return;  // swapped meanwhile, or not writable by name: no event
  (void)::ftruncate(named.get(), file.st_size);
}

}  // namespace

Status commit_created(const CreatedFile& created, const std::string& path) {
  if (!created.replaces) return {};
  const int dir = created.parent.get();
  auto temp = link_unnamed(created.file.get(), dir, path);
  if (!temp) return temp.error();
  if (::renameat(dir, temp->c_str(), dir, created.name.c_str()) != 0) {
    const Error error = Error::from_errno("replace", path);
    (void)::unlinkat(dir, temp->c_str(), 0);
    return error;
  }
  announce_write(created);
  UniqueFd listing(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (listing.valid()) (void)::fsync(listing.get());  // the rename itself, durable
  return {};
}

void remove_created(const CreatedFile& created) {
  if (created.replaces) return;  // unnamed: it goes with its fd
  struct stat file {
  }, named{};
  if (::fstat(created.file.get(), &file) != 0 ||
      ::fstatat(created.parent.get(), created.name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0)
    return;
  if (file.st_dev == named.st_dev && file.st_ino == named.st_ino)
    (void)::unlinkat(created.parent.get(), created.name.c_str(), 0);
}

Result<UniqueFd> open_regular(int root, const std::string& path) {
  auto handle = resolve(root, path, O_PATH, "open");
  if (!handle) return handle.error();
  if (auto s = proto::check_readable_file(handle->get(), path); !s) return s.error();
  return reopen(handle->get(), O_RDONLY, "open", path);
}

Result<UniqueFd> open_dir(int root, const std::string& path) {
  return resolve(root, path, O_PATH | O_DIRECTORY, "open directory");
}

std::map<std::string, std::string> read_metadata(int fd) {
  const std::string prefix = kMetadataXattrPrefix;
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  std::map<std::string, std::string> metadata;
  size_t bytes = 0;
  for (const auto& name : xattr_names(fd, true)) {
    if (!name.starts_with(prefix)) continue;
    std::string value(kMaxMetadataBytes, '\0');
    const ssize_t n = ::getxattr(self.c_str(), name.c_str(), value.data(), value.size());
    if (n < 0) continue;  // removed meanwhile, or larger than we report
    value.resize(static_cast<size_t>(n));
    std::string key = name.substr(prefix.size());
    bytes += name.size() + value.size();
    if (bytes > kMaxMetadataBytes) break;
    if (valid_utf8(key) && valid_utf8(value)) metadata.emplace(std::move(key), std::move(value));
  }
  return metadata;
}

Status write_metadata(int fd, const std::map<std::string, std::string>& metadata,
                      const std::string& path) {
  const std::string prefix = kMetadataXattrPrefix;
  for (const auto& name : xattr_names(fd, false)) {
    if (!name.starts_with(prefix) || metadata.count(name.substr(prefix.size())) > 0) continue;
    if (::fremovexattr(fd, name.c_str()) != 0 && errno != ENODATA)
      return Error::from_errno("remove metadata", path);
  }
  for (const auto& [key, value] : metadata) {
    const std::string name = prefix + key;
    if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) == 0) continue;
    if (errno == ENOTSUP) return {};  // a filesystem without user xattrs: envd goes on too
    return Error::from_errno("write metadata", path);
  }
  return {};
}

std::string absolute_path(const std::string& path, const std::string& home) {
  std::string full;
  if (path.empty() || path == "~") {
    full = home;
  } else if (path.starts_with("~/")) {
    full = home + path.substr(1);
  } else if (path.front() != '/') {
    full = home + "/" + path;
  } else {
    full = path;
  }
  std::string out;
  size_t start = 0;
  while (start <= full.size()) {
    const size_t end = std::min(full.find('/', start), full.size());
    const std::string_view part(full.data() + start, end - start);
    if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    start = end + 1;
  }
  return out.empty() ? "/" : out;
}

}  // namespace abx::runtime::fs_ops
