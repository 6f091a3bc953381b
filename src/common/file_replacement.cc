#include "common/file_replacement.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/fd_io.h"
#include "common/ids.h"

namespace abx {

FileReplacement::FileReplacement(fs::path dest, fs::path temp, UniqueFd fd)
    : dest_(std::move(dest)), temp_(std::move(temp)), fd_(std::move(fd)) {}

FileReplacement::FileReplacement(FileReplacement&& other) noexcept
    : dest_(std::move(other.dest_)),
      temp_(std::move(other.temp_)),
      fd_(std::move(other.fd_)),
      pending_(std::exchange(other.pending_, false)) {}

FileReplacement::~FileReplacement() {
  if (pending_) ::unlink(temp_.c_str());
}

Result<FileReplacement> FileReplacement::create(const fs::path& dest, mode_t mode) {
  // Unique per call, so two writers of one file never share a temp file.
  const fs::path temp = dest.string() + ".abx-part-" + ids::random_hex(6);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return Error::from_errno("create", temp.string());
  return FileReplacement(dest, temp, std::move(fd));
}

Status FileReplacement::write(std::string_view data) {
  return write_all(fd_.get(), data, "write", temp_.string());
}

Status FileReplacement::commit(bool sync) {
  if (sync && ::fsync(fd_.get()) != 0) return Error::from_errno("sync", temp_.string());
  if (::rename(temp_.c_str(), dest_.c_str()) != 0) {
    return Error::from_errno("rename", temp_.string() + " to " + dest_.string());
  }
  pending_ = false;
  return {};
}

Status replace_file(const fs::path& dest, std::string_view text, mode_t mode, bool sync) {
  auto file = FileReplacement::create(dest, mode);
  if (!file) return file.error();
  if (Status st = file->write(text); !st) return st;
  return file->commit(sync);
}

Result<uint64_t> download_to_file(const PieceSource& source, const fs::path& dest, mode_t mode) {
  auto file = FileReplacement::create(dest, mode);
  if (!file) return file.error();
  uint64_t saved = 0;
  while (!source.done()) {
    auto piece = source.next();
    if (!piece) return piece.error();
    if (Status st = file->write(*piece); !st) return st.error();
    saved += piece->size();
  }
  if (Status st = file->commit(); !st) return st.error();
  return saved;
}

}  // namespace abx
