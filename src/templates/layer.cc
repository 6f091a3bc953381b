#include "templates/layer.h"

#include <archive_entry.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "templates/archive_io.h"

namespace abx::templates {
namespace {

constexpr const char* kWhiteoutPrefix = ".wh.";
constexpr const char* kOpaqueMarker = ".wh..wh..opq";
constexpr uint64_t kProgressEvery = 4096;

Error archive_error(const char* step, archive* a, const std::string& what) {
  return archive_io::error(step, a, what);
}

// "./usr/bin/x" and "/usr/bin/x" → "usr/bin/x"; empty for the root itself;
// nullopt if it climbs out with "..".
std::optional<std::string> clean_path(const char* raw) {
  std::string_view path = raw ? raw : "";
  while (path.starts_with('/')) path.remove_prefix(1);
  return path.empty() ? std::string() : archive_io::relative_inside(path);
}

Status remove_path(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return Error{"whiteout", ec.value(), path.string()};
  return {};
}

// An opaque dir hides what earlier layers put there, not what this layer adds.
Status clear_dir_except(const fs::path& dir, const std::string& rel_dir,
                        const std::set<std::string>& written) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return {};
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string rel = (rel_dir.empty() ? "" : rel_dir + "/") + it->path().filename().string();
    if (written.count(rel)) continue;
    if (auto st = remove_path(it->path()); !st) return st;
  }
  if (ec) return Error{"whiteout", ec.value(), dir.string()};
  return {};
}

class LayerWriter {
 public:
  LayerWriter(const fs::path& rootfs, IdShift shift) : rootfs_(rootfs), shift_(shift) {}

  // True when the entry was a whiteout (handled here, nothing to extract).
  Result<bool> handle_whiteout(const std::string& rel) {
    const fs::path path(rel);
    const std::string name = path.filename().string();
    if (!name.starts_with(kWhiteoutPrefix)) return false;
    const std::string parent = path.parent_path().string();
    if (name == kOpaqueMarker) {
      if (auto st = clear_dir_except(rootfs_ / parent, parent, written_); !st) return st.error();
      return true;
    }
    const std::string hidden = name.substr(std::string(kWhiteoutPrefix).size());
    if (auto st = remove_path(rootfs_ / parent / hidden); !st) return st.error();
    return true;
  }

  Status rewrite(archive_entry* entry, const std::string& rel) {
    written_.insert(rel);
    archive_entry_set_pathname(entry, (rootfs_ / rel).c_str());
    if (const char* link = archive_entry_hardlink(entry)) {
      auto target = clean_path(link);
      if (!target) return Error{"layer", EINVAL, std::string("hard link out of the root: ") + link};
      archive_entry_set_hardlink(entry, (rootfs_ / *target).c_str());
    }
    archive_entry_set_uid(entry, archive_entry_uid(entry) + shift_.uid);
    archive_entry_set_gid(entry, archive_entry_gid(entry) + shift_.gid);
    // Names would be looked up in the host's passwd; the shifted ids are what count.
    archive_entry_set_uname(entry, nullptr);
    archive_entry_set_gname(entry, nullptr);
    return {};
  }

 private:
  fs::path rootfs_;
  IdShift shift_;
  std::set<std::string> written_;
};

Result<archive_io::Reader> open_reader(const fs::path& tar) {
  archive_io::Reader reader = archive_io::tar_reader();
  if (!archive_io::open_file(reader.get(), tar)) {
    return archive_error("open layer", reader.get(), tar.string());
  }
  return reader;
}

constexpr int kLayerWriteOptions =
    ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_XATTR |
    ARCHIVE_EXTRACT_UNLINK | ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT;

Status extract_entry(archive* in, archive* out, archive_entry* entry, LayerStats& stats) {
  const std::string what = archive_entry_pathname(entry);
  if (archive_write_header(out, entry) != ARCHIVE_OK)
    return archive_error("write layer", out, what);
  if (archive_entry_size(entry) > 0) {
    switch (archive_io::copy_data(in, out, stats.bytes)) {
      case archive_io::CopyFailure::kNone:
        break;
      case archive_io::CopyFailure::kRead:
        return archive_error("read layer", in, what);
      case archive_io::CopyFailure::kWrite:
        return archive_error("write layer", out, what);
    }
  }
  if (archive_write_finish_entry(out) != ARCHIVE_OK) return archive_error("write layer", out, what);
  return {};
}

}  // namespace

Result<LayerStats> apply_layer(const fs::path& tar, const fs::path& rootfs, IdShift shift,
                               const LayerProgressFn& progress) {
  auto reader = open_reader(tar);
  if (!reader) return reader.error();
  archive_io::Writer writer = archive_io::disk_writer(kLayerWriteOptions);
  LayerWriter layer(rootfs, shift);
  LayerStats stats;
  archive_entry* entry = nullptr;
  for (;;) {
    const int rc = archive_read_next_header(reader->get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return archive_error("read layer", reader->get(), tar.string());
    }
    auto rel = clean_path(archive_entry_pathname(entry));
    if (!rel)
      return Error{"layer", EINVAL,
                   std::string("path out of the root: ") + archive_entry_pathname(entry)};
    auto whiteout = layer.handle_whiteout(*rel);
    if (!whiteout) return whiteout.error();
    if (*whiteout) continue;
    if (auto st = layer.rewrite(entry, *rel); !st) return st.error();
    if (auto st = extract_entry(reader->get(), writer.get(), entry, stats); !st) return st.error();
    if (++stats.entries % kProgressEvery == 0 && progress) progress(stats);
  }
  if (archive_write_close(writer.get()) != ARCHIVE_OK) {
    return archive_error("write layer", writer.get(), rootfs.string());
  }
  return stats;
}

}  // namespace abx::templates
