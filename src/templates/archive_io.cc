#include "templates/archive_io.h"

#include <archive_entry.h>

#include <cerrno>

namespace abx::templates::archive_io {
namespace {

constexpr size_t kReadBlock = 1 << 16;

// Re-roots one member below `dir`; true when the member is to be written.
Result<bool> reroot(archive_entry* entry, const fs::path& dir, const ExtractOptions& options) {
  // A hard link's header has no file type of its own; it is a file.
  const mode_t type = archive_entry_hardlink(entry) ? AE_IFREG : archive_entry_filetype(entry);
  if (options.files_dirs_links && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
    return false;
  }
  const char* raw = archive_entry_pathname(entry);
  const std::string name = raw ? raw : "";
  const auto rel = relative_inside(name);
  if (!rel) return options.outside(name, "");
  if (rel->empty()) return false;  // the dir itself, which exists
  archive_entry_set_pathname(entry, (dir / *rel).c_str());
  if (const char* link = archive_entry_hardlink(entry)) {
    const auto target = relative_inside(link);
    if (!target || target->empty()) return options.outside(name, link);
    archive_entry_set_hardlink(entry, (dir / *target).c_str());
  }
  return true;
}

Status write_member(archive* in, archive* out, archive_entry* entry, const std::string& name,
                    const ExtractOptions& options) {
  if (archive_write_header(out, entry) != ARCHIVE_OK) {
    return options.failed(Stage::kWriteHeader, out, name);
  }
  uint64_t bytes = 0;
  if (archive_entry_size(entry) > 0) {
    switch (copy_data(in, out, bytes)) {
      case CopyFailure::kNone:
        break;
      case CopyFailure::kRead:
        return options.failed(Stage::kData, in, name);
      case CopyFailure::kWrite:
        return options.failed(Stage::kWriteData, out, name);
    }
  }
  if (archive_write_finish_entry(out) != ARCHIVE_OK) {
    return options.failed(Stage::kFinishEntry, out, name);
  }
  return {};
}

}  // namespace

Reader tar_reader() {
  Reader reader(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(reader.get());
  archive_read_support_format_gnutar(reader.get());
  archive_read_support_filter_all(reader.get());
  return reader;
}

bool open_file(archive* reader, const fs::path& path) {
  return archive_read_open_filename(reader, path.c_str(), kReadBlock) == ARCHIVE_OK;
}

Writer disk_writer(int options) {
  Writer writer(archive_write_disk_new(), archive_write_free);
  archive_write_disk_set_options(writer.get(), options);
  return writer;
}

Writer tar_file_writer() {
  Writer writer(archive_write_new(), archive_write_free);
  archive_write_set_format_pax_restricted(writer.get());
  return writer;
}

bool open_file_for_writing(archive* writer, const fs::path& path) {
  return archive_write_open_filename(writer, path.c_str()) == ARCHIVE_OK;
}

std::string error_text(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "unknown libarchive error";
}

int error_number(archive* a) { return archive_errno(a) > 0 ? archive_errno(a) : EIO; }

Error error(std::string step, archive* a, const std::string& what) {
  const char* text = archive_error_string(a);
  return Error{std::move(step), error_number(a), what + (text ? std::string(": ") + text : "")};
}

CopyFailure copy_data(archive* in, archive* out, uint64_t& bytes) {
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  for (;;) {
    const int rc = archive_read_data_block(in, &block, &size, &offset);
    if (rc == ARCHIVE_EOF) return CopyFailure::kNone;
    if (rc != ARCHIVE_OK) return CopyFailure::kRead;
    if (archive_write_data_block(out, block, size, offset) != ARCHIVE_OK) {
      return CopyFailure::kWrite;
    }
    bytes += size;
  }
}

std::optional<std::string> relative_inside(std::string_view name) {
  if (name.empty() || name.front() == '/') return std::nullopt;
  std::string out;
  size_t at = 0;
  while (at <= name.size()) {
    size_t next = name.find('/', at);
    if (next == std::string_view::npos) next = name.size();
    const std::string_view part = name.substr(at, next - at);
    at = next + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return std::nullopt;
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

Status extract(archive* reader, const fs::path& dir, const ExtractOptions& options) {
  Writer writer = disk_writer(options.disk_options);
  archive_entry* entry = nullptr;
  for (bool first = true;; first = false) {
    const int rc = archive_read_next_header(reader, &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return options.failed(first ? Stage::kFirstHeader : Stage::kHeader, reader, "");
    }
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw ? raw : "";
    auto wanted = reroot(entry, dir, options);
    if (!wanted) return wanted.error();
    if (!*wanted) continue;
    if (Status st = write_member(reader, writer.get(), entry, name, options); !st) return st;
  }
  if (archive_write_close(writer.get()) != ARCHIVE_OK) {
    return options.failed(Stage::kClose, writer.get(), "");
  }
  return {};
}

}  // namespace abx::templates::archive_io
