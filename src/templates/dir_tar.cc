#include "templates/dir_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "templates/archive_io.h"

namespace abx::templates {
namespace {

using Entry = std::unique_ptr<archive_entry, decltype(&archive_entry_free)>;

Error tar_error(archive* a, const std::string& what) {
  const char* text = archive_error_string(a);
  return Error{"pack " + what, archive_io::error_number(a), text ? text : ""};
}

Status write_file_data(archive* out, const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", path.string());
  return read_to_end(
      fd.get(),
      [&](std::string_view piece) -> Status {
        if (archive_write_data(out, piece.data(), piece.size()) !=
            static_cast<la_ssize_t>(piece.size()))
          return tar_error(out, path.string());
        return {};
      },
      path.string());
}

Status add_path(archive* out, const fs::path& path, const std::string& name) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Error::from_errno("stat", path.string());
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) return {};
  Entry entry(archive_entry_new(), archive_entry_free);
  archive_entry_copy_stat(entry.get(), &st);
  archive_entry_set_pathname(entry.get(), name.c_str());
  if (S_ISLNK(st.st_mode)) archive_entry_set_symlink(entry.get(), fs::read_symlink(path).c_str());
  if (archive_write_header(out, entry.get()) != ARCHIVE_OK) return tar_error(out, name);
  return S_ISREG(st.st_mode) ? write_file_data(out, path) : Status{};
}

Status add_extra(archive* out, const TarExtra& extra) {
  Entry entry(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(entry.get(), extra.name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(extra.content.size()));
  if (archive_write_header(out, entry.get()) != ARCHIVE_OK) return tar_error(out, extra.name);
  if (archive_write_data(out, extra.content.data(), extra.content.size()) !=
      static_cast<la_ssize_t>(extra.content.size()))
    return tar_error(out, extra.name);
  return {};
}

}  // namespace

Status write_dir_tar(const fs::path& dir, const std::vector<TarExtra>& extras,
                     const fs::path& out) {
  archive_io::Writer tar = archive_io::tar_file_writer();
  if (!archive_io::open_file_for_writing(tar.get(), out)) return tar_error(tar.get(), out.string());
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = fs::relative(it->path(), dir).string();
    if (auto st = add_path(tar.get(), it->path(), name); !st) return st;
  }
  if (ec) return Error{"read", ec.value(), dir.string()};
  for (const auto& extra : extras)
    if (auto st = add_extra(tar.get(), extra); !st) return st;
  if (archive_write_close(tar.get()) != ARCHIVE_OK) return tar_error(tar.get(), out.string());
  return {};
}

}  // namespace abx::templates
