#include "templates/archive_io.h"

#include <archive_entry.h>

#include <cerrno>

#include "templates/rooted_dir.h"

namespace abx::templates::archive_io {
namespace {

constexpr size_t kReadBlock = 1 << 16;

// The member's name below the dir, or nullopt when it is not to be written; an
// error when its name or hard-link target leads out.
Result<std::optional<std::string>> member_rel(archive_entry* entry, const std::string& name,
                                              const ExtractOptions& options,
                                              std::optional<std::string>& link_rel) {
  // A hard link's header has no file type of its own; it is a file.
  const char* link = archive_entry_hardlink(entry);
  const mode_t type = link ? AE_IFREG : archive_entry_filetype(entry);
  if (options.files_dirs_links && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
    return std::optional<std::string>();
  }
  auto rel = relative_inside(name);
  if (!rel) return options.outside(name, "");
  if (rel->empty()) return std::optional<std::string>();  // the dir itself, which exists
  if (link) {
    link_rel = relative_inside(link);
    if (!link_rel || link_rel->empty()) return options.outside(name, link);
  }
  return rel;
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

std::string shown_name(std::string_view name) {
  constexpr size_t kMaxShown = 200;
  std::string out;
  for (const char c : name.substr(0, kMaxShown))
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  if (name.size() > kMaxShown) out += "...";
  return out;
}

Status extract(archive* reader, const fs::path& dir, const ExtractOptions& options) {
  auto root = RootedDir::open(dir);
  if (!root) return options.failed(Stage::kClose, root.error().message(), root.error().errnum, "");
  MemberWriter writer(*root, options.member);
  archive_entry* entry = nullptr;
  uint64_t bytes = 0;
  for (bool first = true;; first = false) {
    const int rc = archive_read_next_header(reader, &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return options.failed(first ? Stage::kFirstHeader : Stage::kHeader, error_text(reader),
                            error_number(reader), "");
    }
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw ? raw : "";
    std::optional<std::string> link;
    auto rel = member_rel(entry, name, options, link);
    if (!rel) return rel.error();
    if (!*rel) continue;
    const Status written =
        writer.write(reader, entry, **rel, link ? link->c_str() : nullptr, bytes);
    if (!written) {
      const Error& e = written.error();
      const bool reading = e.step == kMemberReadStep;
      return options.failed(reading ? Stage::kData : Stage::kWrite,
                            reading ? e.detail : e.message(), e.errnum, name);
    }
  }
  if (Status st = writer.finish(); !st) {
    return options.failed(Stage::kClose, st.error().message(), st.error().errnum, "");
  }
  return {};
}

}  // namespace abx::templates::archive_io
