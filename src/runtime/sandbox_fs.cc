// File access inside a sandbox from the host. Every lookup that crosses more
// than one path component goes through openat2(RESOLVE_IN_ROOT) against the
// sandbox root, so ".." and symlinks (absolute or relative) are resolved as the
// sandbox would and can never name a host file. Operations on a final
// component (mkdir, rename, unlink, readdir children) act on a plain name
// relative to a directory fd that was itself resolved that way.
#include "runtime/sandbox_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/init_protocol.h"

namespace abx::runtime::sandbox_fs {
namespace {

// openat2 may fail with EAGAIN when a rename races a RESOLVE_IN_ROOT lookup.
constexpr int kOpenat2Retries = 8;

Result<UniqueFd> resolve(const Sandbox& sb, const std::string& path, uint64_t flags,
                         const char* step, uint64_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, sb.root_fd(), path.c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN || attempt == kOpenat2Retries) return Error::from_errno(step, path);
  }
}

Error error_for(const char* step, int errnum, const std::string& path) {
  return Error{step, errnum, path};
}

// "/a/b/c" → {"/a/b", "c"}; the path is already absolute and normalised.
std::pair<std::string, std::string> split_last(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {"/", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

bool names_an_entry(const std::string& name) {
  return !name.empty() && name != "." && name != "..";
}

// The parent directory (O_PATH) and the final name of `path`, for operations
// that must act on the last component itself rather than on what it points to.
struct ParentAndName {
  UniqueFd parent;
  std::string name;
};

Result<ParentAndName> resolve_parent(const Sandbox& sb, const std::string& path, const char* step) {
  const std::string normalised = absolute_path(path, "/");
  auto [parent_path, name] = split_last(normalised);
  if (!names_an_entry(name)) return error_for(step, EINVAL, path);
  auto parent = resolve(sb, parent_path, O_PATH | O_DIRECTORY, step);
  if (!parent) return parent.error();
  return ParentAndName{std::move(parent.value()), std::move(name)};
}

// Sandbox root may override file permissions inside its sandbox; so may the
// daemon acting for it. Changing the fsuid away from 0 drops these
// capabilities; they stay permitted and are raised again here (this thread only).
void raise_file_capabilities() {
  static constexpr cap_value_t kFileCaps[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
                                              CAP_FOWNER, CAP_FSETID};
  cap_t caps = ::cap_get_proc();
  if (caps == nullptr) return;
  ::cap_set_flag(caps, CAP_EFFECTIVE, std::size(kFileCaps), kFileCaps, CAP_SET);
  (void)::cap_set_proc(caps);  // unprivileged there is nothing to raise
  ::cap_free(caps);
}

// Acts on the sandbox's files with the filesystem ids of a sandbox user, on
// this thread only (setfsuid is per thread). A sandbox's overlay and tmpfs
// belong to its user namespace, where the daemon's root has no mapping:
// creating or renaming as host root fails there with EOVERFLOW. Acting as
// `user` also applies that user's permissions, as envd does; acting as sandbox
// root keeps root's power to override them. Unprivileged (tests, rootless)
// the ids cannot change and files stay the daemon's.
class ActingAs {
 public:
  ActingAs(const Sandbox& sb, uint32_t sandbox_uid)
      : groups_(sb.host_gid(sandbox_uid)),
        old_gid_(static_cast<gid_t>(::setfsgid(sb.host_gid(sandbox_uid)))),
        old_uid_(static_cast<uid_t>(::setfsuid(sb.host_uid(sandbox_uid)))) {
    if (sandbox_uid == 0) raise_file_capabilities();
  }
  ~ActingAs() {
    ::setfsuid(old_uid_);  // back to 0 also restores the file capabilities
    ::setfsgid(old_gid_);
  }
  ActingAs(const ActingAs&) = delete;
  ActingAs& operator=(const ActingAs&) = delete;

 private:
  // The daemon's own supplementary groups (host root's, often gid 0) must not
  // lend their access. glibc's setgroups() changes every thread of the
  // process; the raw syscall changes this thread only.
  class ThreadGroups {
   public:
    explicit ThreadGroups(gid_t only) {
      const long count = ::syscall(SYS_getgroups, 0, nullptr);
      saved_.resize(count > 0 ? static_cast<size_t>(count) : 0);
      if (count < 0 || ::syscall(SYS_getgroups, count, saved_.data()) != count) return;
      switched_ = ::syscall(SYS_setgroups, 1, &only) == 0;  // unprivileged: stays as is
    }
    ~ThreadGroups() {
      if (switched_) (void)::syscall(SYS_setgroups, saved_.size(), saved_.data());
    }
    ThreadGroups(const ThreadGroups&) = delete;
    ThreadGroups& operator=(const ThreadGroups&) = delete;

   private:
    std::vector<gid_t> saved_;
    bool switched_ = false;
  };

  ThreadGroups groups_;
  gid_t old_gid_;
  uid_t old_uid_;
};

// Turns a checked O_PATH handle into an open file. /proc/self/fd reopens the
// very inode that was checked, so swapping the path for a FIFO or a device
// after the check changes nothing.
Result<UniqueFd> reopen(int path_fd, int flags, const char* step, const std::string& path) {
  const std::string self = "/proc/self/fd/" + std::to_string(path_fd);
  const int fd = ::open(self.c_str(), flags | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Error::from_errno(step, path);
  return UniqueFd(fd);
}

Result<struct stat> stat_fd(int fd, const char* step, const std::string& path) {
  struct stat st {};
  if (::fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return Error::from_errno(step, path);
  }
  return st;
}

// mkdir -p of every component of `dir` (absolute, normalised), as the
// caller's ActingAs. New directories are 0755. Returns the final dir.
Result<UniqueFd> make_parents(const Sandbox& sb, const std::string& dir) {
  auto current = resolve(sb, "/", O_PATH | O_DIRECTORY, "open");
  if (!current) return current.error();
  size_t start = 1;
  while (start < dir.size()) {
    const size_t end = std::min(dir.find('/', start), dir.size());
    const std::string prefix = dir.substr(0, end);
    const std::string name = dir.substr(start, end - start);
    start = end + 1;
    auto next = resolve(sb, prefix, O_PATH | O_DIRECTORY, "open");
    if (!next && next.error().errnum == ENOENT && names_an_entry(name)) {
      if (::mkdirat(current->get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
        return Error::from_errno("mkdir", prefix);
      }
      next = resolve(sb, prefix, O_PATH | O_DIRECTORY, "open");
    }
    if (!next) return next.error();
    current = std::move(next);
  }
  return current;
}

std::string owner_name(uid_t host_id, uid_t host_root, uid_t host_user) {
  if (host_id == host_root) return "root";
  if (host_id == host_user) return "user";
  return std::to_string(host_id);
}

FileType type_of(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kFile;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  return FileType::kOther;
}

std::string read_link(int dir_fd, const char* name) {
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlinkat(dir_fd, name, target.data(), target.size());
  target.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return target;
}

// `name` relative to `dir_fd`, or the fd itself when `name` is "".
EntryInfo describe(const Sandbox& sb, const struct stat& st, int dir_fd, const char* name,
                   const std::string& path) {
  EntryInfo info;
  info.name = path == "/" ? "/" : split_last(path).second;
  info.path = path;
  info.type = type_of(st.st_mode);
  info.size = static_cast<uint64_t>(st.st_size);
  info.mode = st.st_mode & 07777;
  info.owner = owner_name(st.st_uid, sb.host_uid(0), sb.host_uid(1000));
  info.group = owner_name(st.st_gid, sb.host_gid(0), sb.host_gid(1000));
  info.mtime_sec = st.st_mtim.tv_sec;
  info.mtime_nsec = st.st_mtim.tv_nsec;
  if (S_ISLNK(st.st_mode)) info.symlink_target = read_link(dir_fd, name);
  return info;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
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

Status list_into(const Sandbox& sb, int dir_fd, const std::string& dir_path, int depth,
                 std::vector<EntryInfo>& out) {
  return for_each_entry(dir_fd, "list", dir_path, [&](const std::string& name) -> Status {
    const std::string path = join(dir_path, name);
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return {};  // removed while we listed
      return Error::from_errno("stat", path);
    }
    out.push_back(describe(sb, st, dir_fd, name.c_str(), path));
    if (depth <= 1 || !S_ISDIR(st.st_mode)) return {};
    auto child = open_child_dir(dir_fd, name, "list", path);
    if (!child) return child.error();
    return list_into(sb, child->get(), path, depth - 1, out);
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
    if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0) {
      return Error::from_errno("remove", path);
    }
    return {};
  });
}

// Creates (mode 0644) or truncates a regular file, as the caller's ActingAs.
// O_NONBLOCK keeps a FIFO planted at the path from blocking the daemon; the
// type check then rejects it.
// A refusal of a files-API open in its words; `verb` is "read" or "written".
Error explain_refusal(const Error& error, const std::string& path, const char* verb = "read") {
  const std::string can = std::string("can be ") + verb;
  if (error.errnum == EPERM && error.step.starts_with(proto::kPseudoFileStep))
    return Error::with_message(
        "'" + path + "' is a /proc or /sys file: only the sandbox's own files " + can, EPERM);
  if (error.errnum == EINVAL && error.step.starts_with(proto::kNotRegularStep))
    return Error::with_message(
        "'" + path + "' is a device, FIFO or socket: only regular files " + can, EINVAL);
  if (error.errnum == EACCES)
    return Error::with_message("permission denied: the requested user cannot read '" + path + "'",
                               EACCES);
  return error;
}

// Checked on the opened fd, before a byte is written: an upload to a /proc
// or /sys file (say /proc/mtrr, through a link the sandbox planted) would
// reach host kernel code with the daemon's powers. O_NONBLOCK keeps a FIFO
// from blocking the open.
Result<UniqueFd> create_or_truncate(const Sandbox& sb, const std::string& path) {
  auto fd = resolve(sb, path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY, "open", 0644);
  if (!fd) return fd.error();
  if (auto s = proto::check_readable_file(fd->get(), path); !s)
    return explain_refusal(s.error(), path, "written");
  if (::fcntl(fd->get(), F_SETFL, 0) != 0) return Error::from_errno("open", path);
  return fd;
}

// For an init that cannot open files itself: the same open, from the host,
// with the user's filesystem ids on this thread.
Result<UniqueFd> open_read_on_host(const Sandbox& sb, const std::string& path, uint32_t uid) {
  const ActingAs user(sb, uid);
  auto handle = resolve(sb, path, O_PATH, "open");
  if (!handle) return handle.error();
  if (auto s = proto::check_readable_file(handle->get(), path); !s) return s.error();
  return reopen(handle->get(), O_RDONLY, "open", path);
}

}  // namespace

Result<UniqueFd> open_read_as(Sandbox& sb, const std::string& path, uint32_t uid, uint32_t gid) {
  auto fd = sb.open_as(path, uid, gid);
  if (!fd && fd.error().errnum == ENOSYS) fd = open_read_on_host(sb, path, uid);
  if (!fd) return explain_refusal(fd.error(), path);
  // The fd came from inside the sandbox's walls: check what it is.
  if (auto s = proto::check_readable_file(fd->get(), path); !s)
    return explain_refusal(s.error(), path);
  return fd;
}

// A planted link to /proc/kmsg would otherwise block (and drain the host's
// kernel log for) the daemon, which as host root may open it.
Result<UniqueFd> open_read(const Sandbox& sb, const std::string& path) {
  auto handle = resolve(sb, path, O_PATH, "open");
  if (!handle) return handle.error();
  if (auto s = proto::check_readable_file(handle->get(), path); !s) return s.error();
  return reopen(handle->get(), O_RDONLY, "open", path);
}

Result<UniqueFd> open_write(const Sandbox& sb, const std::string& path, uint32_t owner_uid) {
  const std::string normalised = absolute_path(path, "/");
  const auto [parent_path, name] = split_last(normalised);
  if (!names_an_entry(name)) return error_for("open", EISDIR, path);
  const ActingAs owner(sb, owner_uid);
  auto parent = make_parents(sb, parent_path);
  if (!parent) return parent.error();
  return create_or_truncate(sb, normalised);
}

Result<UniqueFd> open_dir(const Sandbox& sb, const std::string& path) {
  return resolve(sb, absolute_path(path, "/"), O_PATH | O_DIRECTORY, "open directory");
}

Result<EntryInfo> stat(const Sandbox& sb, const std::string& path) {
  const std::string normalised = absolute_path(path, "/");
  auto handle = resolve(sb, normalised, O_PATH | O_NOFOLLOW, "stat");
  if (!handle) return handle.error();
  auto st = stat_fd(handle->get(), "stat", normalised);
  if (!st) return st.error();
  return describe(sb, *st, handle->get(), "", normalised);
}

Result<std::vector<EntryInfo>> list_dir(const Sandbox& sb, const std::string& path, int depth) {
  if (depth < 1) return error_for("list", EINVAL, "depth must be at least 1");
  const std::string normalised = absolute_path(path, "/");
  auto dir = resolve(sb, normalised, O_RDONLY | O_DIRECTORY, "list");
  if (!dir) return dir.error();
  std::vector<EntryInfo> entries;
  if (auto st = list_into(sb, dir->get(), normalised, depth, entries); !st) return st.error();
  return entries;
}

Status make_dir(const Sandbox& sb, const std::string& path, uint32_t owner_uid) {
  const std::string normalised = absolute_path(path, "/");
  const auto [parent_path, name] = split_last(normalised);
  if (!names_an_entry(name)) return error_for("mkdir", EEXIST, path);
  const ActingAs owner(sb, owner_uid);
  auto parent = make_parents(sb, parent_path);
  if (!parent) return parent.error();
  if (::mkdirat(parent->get(), name.c_str(), 0755) != 0) {
    return Error::from_errno("mkdir", normalised);
  }
  return {};
}

Status make_symlink(const Sandbox& sb, const std::string& path, const std::string& target,
                    uint32_t owner_uid) {
  const std::string normalised = absolute_path(path, "/");
  const auto [parent_path, name] = split_last(normalised);
  if (!names_an_entry(name)) return error_for("symlink", EEXIST, path);
  const ActingAs owner(sb, owner_uid);
  auto parent = make_parents(sb, parent_path);
  if (!parent) return parent.error();
  if (::symlinkat(target.c_str(), parent->get(), name.c_str()) != 0)
    return Error::from_errno("symlink", normalised);
  return {};
}

Status move(const Sandbox& sb, const std::string& from, const std::string& to) {
  const ActingAs sandbox_root(sb, 0);
  auto source = resolve_parent(sb, from, "rename");
  if (!source) return source.error();
  auto destination = resolve_parent(sb, to, "rename");
  if (!destination) return destination.error();
  if (::renameat2(source->parent.get(), source->name.c_str(), destination->parent.get(),
                  destination->name.c_str(), 0) != 0) {
    return Error::from_errno("rename", from + " -> " + to);
  }
  return {};
}

Status remove(const Sandbox& sb, const std::string& path) {
  const std::string normalised = absolute_path(path, "/");
  const ActingAs sandbox_root(sb, 0);
  auto target = resolve_parent(sb, normalised, "remove");
  if (!target) return target.error();
  const int parent = target->parent.get();
  const char* name = target->name.c_str();
  if (::unlinkat(parent, name, 0) == 0) return {};
  if (errno != EISDIR) return Error::from_errno("remove", normalised);
  auto dir = open_child_dir(parent, target->name, "remove", normalised);
  if (!dir) return dir.error();
  if (auto st = remove_tree_contents(dir->get(), normalised); !st) return st;
  if (::unlinkat(parent, name, AT_REMOVEDIR) != 0) return Error::from_errno("remove", normalised);
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

}  // namespace abx::runtime::sandbox_fs
