#include "templates/tree_ops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx::templates::tree {
namespace {

Error from_error_code(const char* step, const std::error_code& ec, const fs::path& path) {
  return Error{step, ec.value(), path.string()};
}

Status copy_entry(const fs::path& from, const fs::path& to, const SkipFn& skip);

Status copy_dir(const fs::path& from, const fs::path& to, const SkipFn& skip, mode_t mode) {
  if (auto made = make_dir(to, mode & 07777); !made) return made;
  std::error_code ec;
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto copied = copy_entry(it->path(), to / it->path().filename(), skip); !copied) {
      return copied;
    }
  }
  if (ec) return from_error_code("copy", ec, from);
  return {};
}

Status copy_entry(const fs::path& from, const fs::path& to, const SkipFn& skip) {
  if (skip(from)) return {};
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return Error::from_errno("copy", from.string());
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(from, ec);
    if (ec) return from_error_code("copy", ec, from);
    return make_symlink(target.string(), to);
  }
  if (S_ISDIR(st.st_mode)) return copy_dir(from, to, skip, st.st_mode);
  if (!S_ISREG(st.st_mode)) return {};
  std::error_code ec;
  fs::copy_file(from, to, ec);
  if (ec) return from_error_code("copy", ec, from);
  return {};
}

bool ownership_is_fixed() { return ::geteuid() != 0; }

}  // namespace

Status make_dir(const fs::path& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0) return Error::from_errno("mkdir", path.string());
  // mkdir applies the umask; template modes (1777 /tmp, 0700 /root) must be exact.
  if (::chmod(path.c_str(), mode) != 0) return Error::from_errno("chmod", path.string());
  return {};
}

Status write_text(const fs::path& path, const std::string& text, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.valid()) return Error::from_errno("write", path.string());
  return write_all(fd.get(), text, "write", path.string());
}

Status make_symlink(const std::string& target, const fs::path& link) {
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    return Error::from_errno("symlink", link.string());
  }
  return {};
}

Status copy(const fs::path& from, const fs::path& to, const SkipFn& skip) {
  return copy_entry(from, to, skip);
}

Status chown_tree(const fs::path& path, uid_t uid, gid_t gid) {
  if (ownership_is_fixed()) return {};
  if (::lchown(path.c_str(), uid, gid) != 0) return Error::from_errno("chown", path.string());
  if (fs::is_symlink(path) || !fs::is_directory(path)) return {};
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto owned = chown_tree(it->path(), uid, gid); !owned) return owned;
  }
  if (ec) return from_error_code("chown", ec, path);
  return {};
}

Status remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return from_error_code("remove", ec, path);
  return {};
}

}  // namespace abx::templates::tree
