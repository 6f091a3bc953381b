#include "templates/member_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

namespace abx::templates {
namespace {

// Ids at or above this are outside every sandbox's map; they become `nobody`
// rather than wrapping onto a host id.
constexpr la_int64_t kSandboxIds = 65536;
constexpr la_int64_t kNobody = 65534;

bool as_root() { return ::geteuid() == 0; }

la_int64_t mapped_id(la_int64_t id) { return id < 0 || id >= kSandboxIds ? kNobody : id; }

// user.overlay.* would be read by a user-xattr overlay as its own metadata
// (redirects, opaque dirs); trusted.* and the rest are not an image's to set.
bool wanted_xattr(std::string_view name) {
  if (name == "security.capability") return true;
  return name.starts_with("user.") && !name.starts_with("user.overlay.");
}

std::vector<std::pair<std::string, std::string>> xattrs_of(archive_entry* entry) {
  std::vector<std::pair<std::string, std::string>> out;
  archive_entry_xattr_reset(entry);
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  while (archive_entry_xattr_next(entry, &name, &value, &size) == ARCHIVE_OK) {
    if (name != nullptr && wanted_xattr(name))
      out.emplace_back(name, std::string(static_cast<const char*>(value), size));
  }
  return out;
}

// Unprivileged (tests) security.* cannot be set; filesystems without xattrs say so.
Status set_xattrs(int fd, const std::vector<std::pair<std::string, std::string>>& xattrs) {
  for (const auto& [name, value] : xattrs) {
    if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) == 0) continue;
    if (errno == ENOTSUP || (errno == EPERM && !as_root())) continue;
    return Error::from_errno("set xattr", name);
  }
  return {};
}

bool has_mtime(archive_entry* entry) { return archive_entry_mtime_is_set(entry) != 0; }

timespec mtime_of(archive_entry* entry) {
  return timespec{static_cast<time_t>(archive_entry_mtime(entry)),
                  static_cast<long>(archive_entry_mtime_nsec(entry))};
}

Status write_at(int fd, const char* data, size_t size, la_int64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("write");
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return {};
}

// Copies the member's data blocks to `fd` at their offsets (holes stay holes).
Status copy_blocks(archive* in, int fd, uint64_t& bytes) {
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  for (;;) {
    const int rc = archive_read_data_block(in, &block, &size, &offset);
    if (rc == ARCHIVE_EOF) return {};
    if (rc != ARCHIVE_OK) {
      const char* text = archive_error_string(in);
      return Error{kMemberReadStep, archive_errno(in) > 0 ? archive_errno(in) : EIO,
                   text ? text : ""};
    }
    if (auto st = write_at(fd, static_cast<const char*>(block), size, offset); !st) return st;
    bytes += size;
  }
}

}  // namespace

uid_t MemberWriter::owner_uid(archive_entry* entry) const {
  return options_.shift.uid + static_cast<uid_t>(mapped_id(archive_entry_uid(entry)));
}

gid_t MemberWriter::owner_gid(archive_entry* entry) const {
  return options_.shift.gid + static_cast<gid_t>(mapped_id(archive_entry_gid(entry)));
}

mode_t MemberWriter::mode_of(archive_entry* entry) const {
  const mode_t mode = archive_entry_perm(entry) & 07777;
  return options_.owners || options_.keep_set_id ? mode : mode & ~mode_t{06000};
}

// Owner first: chown clears set-id bits and file capabilities.
Status MemberWriter::set_attributes(int fd, archive_entry* entry) {
  if (options_.owners && as_root() && ::fchown(fd, owner_uid(entry), owner_gid(entry)) != 0)
    return Error::from_errno("chown");
  if (options_.xattrs)
    if (auto st = set_xattrs(fd, xattrs_of(entry)); !st) return st;
  if (::fchmod(fd, mode_of(entry)) != 0) return Error::from_errno("chmod");
  if (has_mtime(entry)) {
    const timespec times[2] = {mtime_of(entry), mtime_of(entry)};
    if (::futimens(fd, times) != 0) return Error::from_errno("set times");
  }
  return {};
}

// For what has no fd of its own to open safely (symlinks, fifos).
Status MemberWriter::set_name_attributes(const ParentAndName& at, archive_entry* entry) {
  const int dir = at.dir.get();
  const char* name = at.name.c_str();
  if (options_.owners && as_root() &&
      ::fchownat(dir, name, owner_uid(entry), owner_gid(entry), AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("chown");
  if (has_mtime(entry)) {
    const timespec times[2] = {mtime_of(entry), mtime_of(entry)};
    if (::utimensat(dir, name, times, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::from_errno("set times");
  }
  return {};
}

Status MemberWriter::check_size(archive_entry* entry) const {
  if (options_.max_file_bytes == 0 || !archive_entry_size_is_set(entry)) return {};
  const auto size = static_cast<uint64_t>(std::max<la_int64_t>(archive_entry_size(entry), 0));
  if (size <= options_.max_file_bytes) return {};
  return Error{"write", EFBIG,
               std::to_string(size) + " bytes, more than the " +
                   std::to_string(options_.max_file_bytes) + " bytes free to unpack it"};
}

Status MemberWriter::write_file(archive* in, archive_entry* entry, const ParentAndName& at,
                                uint64_t& bytes) {
  if (auto st = check_size(entry); !st) return st;
  if (auto st = remove_at(at.dir.get(), at.name); !st) return st;
  UniqueFd fd(::openat(at.dir.get(), at.name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("create");
  if (auto st = copy_blocks(in, fd.get(), bytes); !st) return st;
  // A sparse file's last hole has no block to write.
  if (archive_entry_size_is_set(entry) && archive_entry_size(entry) >= 0 &&
      ::ftruncate(fd.get(), static_cast<off_t>(archive_entry_size(entry))) != 0)
    return Error::from_errno("truncate");
  return set_attributes(fd.get(), entry);
}

Status MemberWriter::write_dir(archive_entry* entry, const std::string& rel) {
  if (!rel.empty()) {
    auto at = root_.parent_of(rel, true);
    if (!at) return at.error();
    struct stat st {};
    const bool is_dir = ::fstatat(at->dir.get(), at->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                        S_ISDIR(st.st_mode);
    if (!is_dir) {
      if (auto removed = remove_at(at->dir.get(), at->name); !removed) return removed;
      if (::mkdirat(at->dir.get(), at->name.c_str(), 0700) != 0) return Error::from_errno("mkdir");
    }
  }
  dirs_.push_back(DirFixup{rel, mode_of(entry), owner_uid(entry), owner_gid(entry),
                           has_mtime(entry) ? mtime_of(entry) : timespec{0, UTIME_OMIT},
                           options_.xattrs ? xattrs_of(entry) : decltype(DirFixup::xattrs){}});
  return {};
}

Status MemberWriter::write_symlink(archive_entry* entry, const ParentAndName& at) {
  const char* target = archive_entry_symlink(entry);
  if (target == nullptr || *target == '\0') return Error{"symlink", EINVAL, "no target"};
  if (auto st = remove_at(at.dir.get(), at.name); !st) return st;
  // The target is kept as written: it is never followed here.
  if (::symlinkat(target, at.dir.get(), at.name.c_str()) != 0) return Error::from_errno("symlink");
  return set_name_attributes(at, entry);
}

Status MemberWriter::write_hardlink(const std::string& target, const ParentAndName& at) {
  auto from = root_.parent_of(target, false);
  if (!from) return Error{"hard link", from.error().errnum, "to " + target};
  if (auto st = remove_at(at.dir.get(), at.name); !st) return st;
  // No AT_SYMLINK_FOLLOW: a link to a symlink links the symlink, not what it names.
  if (::linkat(from->dir.get(), from->name.c_str(), at.dir.get(), at.name.c_str(), 0) != 0)
    return Error{"hard link", errno, "to " + target};
  return {};
}

Status MemberWriter::write_fifo(archive_entry* entry, const ParentAndName& at) {
  if (auto st = remove_at(at.dir.get(), at.name); !st) return st;
  if (::mknodat(at.dir.get(), at.name.c_str(), S_IFIFO | 0600, 0) != 0)
    return Error::from_errno("mkfifo");
  // Just made here, in a dir only this writer uses: the name is the fifo.
  if (::fchmodat(at.dir.get(), at.name.c_str(), mode_of(entry), 0) != 0)
    return Error::from_errno("chmod");
  return set_name_attributes(at, entry);
}

Status MemberWriter::write(archive* in, archive_entry* entry, const std::string& rel,
                           const char* link, uint64_t& bytes) {
  const mode_t type = link ? AE_IFREG : archive_entry_filetype(entry);
  if (type == AE_IFDIR) return write_dir(entry, rel);
  if (type != AE_IFREG && type != AE_IFLNK && type != AE_IFIFO) return {};
  if (rel.empty()) return Error{"write", EINVAL, "only a directory may name the root"};
  auto at = root_.parent_of(rel, true);
  if (!at) return at.error();
  if (link) return write_hardlink(link, *at);
  if (type == AE_IFLNK) return write_symlink(entry, *at);
  if (type == AE_IFIFO) return write_fifo(entry, *at);
  return write_file(in, entry, *at, bytes);
}

Status MemberWriter::finish() {
  // Deepest first, so setting a dir's time is not undone by fixing one inside it.
  std::reverse(dirs_.begin(), dirs_.end());
  for (const DirFixup& dir : dirs_) {
    // A later member may have replaced the dir (with a file or a symlink): skip it then.
    auto fd = root_.open_dir(dir.rel, O_RDONLY | O_NOFOLLOW);
    if (!fd) continue;
    if (options_.owners && as_root() && ::fchown(fd->get(), dir.uid, dir.gid) != 0)
      return Error::from_errno("chown", dir.rel);
    if (auto st = set_xattrs(fd->get(), dir.xattrs); !st) return st;
    if (::fchmod(fd->get(), dir.mode) != 0) return Error::from_errno("chmod", dir.rel);
    const timespec times[2] = {dir.mtime, dir.mtime};
    if (::futimens(fd->get(), times) != 0) return Error::from_errno("set times", dir.rel);
  }
  dirs_.clear();
  return {};
}

}  // namespace abx::templates
