#include "runtime/root_paths.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <utility>

namespace abx::runtime::root_paths {
namespace {

// openat2 may fail with EAGAIN when a rename races a RESOLVE_IN_ROOT lookup.
constexpr int kOpenat2Retries = 8;
// As the kernel's own bound on the links one lookup follows (MAXSYMLINKS).
constexpr int kMaxLinks = 40;

// "a/b//c/" → {"a/b", "c"}; {"/", ""} for the root itself.
std::pair<std::string, std::string> split_last(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {"/", path};
  std::string parent = path.substr(0, slash);
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  return {parent.empty() ? "/" : parent, path.substr(slash + 1)};
}

bool names_an_entry(const std::string& name) {
  return !name.empty() && name != "." && name != "..";
}

// Makes `name` in `parent` as `kind`; never follows a link at `name`.
int make_entry(int parent, const std::string& name, Kind kind, mode_t mode) {
  if (kind == Kind::kDirectory) return ::mkdirat(parent, name.c_str(), mode);
  const int fd =
      ::openat(parent, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  ::close(fd);
  return 0;
}

Status check_kind(int fd, Kind kind, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::from_errno("stat in the new root", path);
  if (kind == Kind::kFile && S_ISDIR(st.st_mode))
    return Error{"a file was expected in the new root", EISDIR, path};
  return {};
}

Result<UniqueFd> make_within(int root, const std::string& path, Kind kind, mode_t mode, int flags,
                             uint64_t extra_resolve, int* links_left) {
  auto found = open(root, path, flags, extra_resolve);
  if (found || found.error().errnum != ENOENT) return found;
  const auto [parent_path, name] = split_last(path);
  if (!names_an_entry(name)) return found;
  auto parent = make_within(root, parent_path, Kind::kDirectory, 0755, O_PATH | O_DIRECTORY,
                            extra_resolve, links_left);
  if (!parent) return parent.error();
  if (make_entry(parent->get(), name, kind, mode) != 0) {
    if (errno != EEXIST) return Error::from_errno("make in the new root", path);
    // Present but not found: a link pointing nowhere yet. Its target is made
    // where the kernel would look for it, from the link's own directory.
    char target[PATH_MAX];
    const ssize_t n = ::readlinkat(parent->get(), name.c_str(), target, sizeof target - 1);
    if (n <= 0) return Error::from_errno("make in the new root", path);
    if (--*links_left < 0) return Error{"make in the new root", ELOOP, path};
    const std::string link(target, static_cast<size_t>(n));
    const std::string next = link.front() == '/' ? link : parent_path + "/" + link;
    return make_within(root, next, kind, mode, flags, extra_resolve, links_left);
  }
  return open(root, path, flags, extra_resolve);
}

}  // namespace

Result<UniqueFd> open(int root, const std::string& path, int flags, uint64_t extra_resolve) {
  open_how how{};
  how.flags = static_cast<unsigned>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | extra_resolve;
  const char* name = path.empty() ? "/" : path.c_str();
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, root, name, &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN || attempt == kOpenat2Retries)
      return Error::from_errno("open in the new root", path);
  }
}

Result<UniqueFd> make(int root, const std::string& path, Kind kind, mode_t mode, int flags,
                      uint64_t extra_resolve) {
  int links_left = kMaxLinks;
  auto fd = make_within(root, path, kind, mode, flags, extra_resolve, &links_left);
  if (!fd) return fd;
  if (auto s = check_kind(fd->get(), kind, path); !s) return s.error();
  return fd;
}

}  // namespace abx::runtime::root_paths
