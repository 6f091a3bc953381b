#include "templates/rooted_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace abx::templates {
namespace {

// openat2 may fail with EAGAIN when a rename races a RESOLVE_IN_ROOT lookup.
constexpr int kOpenat2Retries = 8;
// Removing a tree holds one fd per level; deeper trees are refused, not followed.
constexpr int kMaxRemoveDepth = 512;

bool as_root() { return ::geteuid() == 0; }

Status remove_below(int dir, const std::string& name, int depth) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return Error::from_errno("remove", name);
  }
  if (S_ISDIR(st.st_mode)) {
    if (depth >= kMaxRemoveDepth)
      return Error{"remove", ELOOP,
                   name + ": more than " + std::to_string(kMaxRemoveDepth) + " nested directories"};
    UniqueFd sub(::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) return Error::from_errno("remove", name);
    auto names = names_in(sub.get());
    if (!names) return names.error();
    for (const auto& child : *names)
      if (auto st2 = remove_below(sub.get(), child, depth + 1); !st2) return st2;
  }
  if (::unlinkat(dir, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
    return Error::from_errno("remove", name);
  return {};
}

}  // namespace

Result<RootedDir> RootedDir::open(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", dir.string());
  return RootedDir(std::move(fd), dir);
}

Result<UniqueFd> RootedDir::open_dir(const std::string& rel, int flags) const {
  open_how how{};
  how.flags = static_cast<unsigned>(flags | O_DIRECTORY | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  const char* path = rel.empty() ? "." : rel.c_str();
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, fd_.get(), path, &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN || attempt == kOpenat2Retries) return Error::from_errno("open", rel);
  }
}

// Walks `rel` from the top, making each missing dir in the one above it.
Result<UniqueFd> RootedDir::make_dirs(const std::string& rel) const {
  auto current = open_dir("");
  if (!current) return current.error();
  for (size_t end = 0; end != std::string::npos;) {
    end = rel.find('/', end + 1);
    const std::string prefix = rel.substr(0, end);
    auto next = open_dir(prefix);
    if (!next && next.error().errnum == ENOENT) {
      const std::string name = prefix.substr(prefix.find_last_of('/') + 1);
      if (::mkdirat(current->get(), name.c_str(), 0755) != 0 && errno != EEXIST)
        return Error::from_errno("mkdir", prefix);
      if (as_root() && ::fchownat(current->get(), name.c_str(), new_dir_uid_, new_dir_gid_,
                                  AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("chown", prefix);
      next = open_dir(prefix);
    }
    if (!next) return next.error();
    current = std::move(next);
  }
  return current;
}

Result<ParentAndName> RootedDir::parent_of(const std::string& rel, bool make_parents) const {
  const size_t slash = rel.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
  std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  auto dir = open_dir(parent);
  if (!dir && dir.error().errnum == ENOENT && make_parents) dir = make_dirs(parent);
  if (!dir) return dir.error();
  return ParentAndName{std::move(*dir), std::move(name)};
}

Result<std::vector<std::string>> names_in(int dir) {
  const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno("read dir");
  DIR* stream = ::fdopendir(fd);
  if (stream == nullptr) {
    const int saved = errno;
    ::close(fd);
    return Error{"read dir", saved, {}};
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  const int failed = errno;
  ::closedir(stream);
  if (failed != 0) return Error{"read dir", failed, {}};
  return names;
}

Status remove_at(int dir, const std::string& name) { return remove_below(dir, name, 0); }

}  // namespace abx::templates
