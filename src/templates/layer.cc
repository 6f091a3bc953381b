#include "templates/layer.h"

#include <archive_entry.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "templates/archive_io.h"
#include "templates/rooted_dir.h"

namespace abx::templates {
namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kWhiteoutMetaPrefix = ".wh..wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";
constexpr uint64_t kProgressEvery = 4096;

// "./usr/bin/x" and "/usr/bin/x" → "usr/bin/x"; empty for the root itself;
// nullopt if it climbs out with "..".
std::optional<std::string> clean_path(const char* raw) {
  std::string_view path = raw ? raw : "";
  while (path.starts_with('/')) path.remove_prefix(1);
  return path.empty() ? std::string() : archive_io::relative_inside(path);
}

Error member_error(const std::string& name, const Error& cause) {
  return Error{"layer member '" + archive_io::shown_name(name) + "': " + cause.step, cause.errnum,
               cause.detail};
}

Error refused(const std::string& name, const std::string& why) {
  return Error{"layer member '" + archive_io::shown_name(name) + "'", EINVAL, why};
}

std::pair<std::string, std::string> split_last(const std::string& rel) {
  const size_t slash = rel.find_last_of('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

class LayerApplier {
 public:
  LayerApplier(const RootedDir& root, IdShift shift)
      : root_(root), writer_(root, MemberOptions{true, shift, true, true}) {}

  Status apply(archive* in, archive_entry* entry, LayerStats& stats) {
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw ? raw : "";
    const auto rel = clean_path(raw);
    if (!rel) return refused(name, "its name climbs out of the layer with '..'");
    auto whiteout = handle_whiteout(name, *rel);
    if (!whiteout) return whiteout.error();
    if (*whiteout) return {};
    std::optional<std::string> target;
    if (const char* link = archive_entry_hardlink(entry)) {
      target = clean_path(link);
      if (!target || target->empty())
        return refused(name, std::string("a hard link out of the layer, to '") +
                                 archive_io::shown_name(link) + "'");
    }
    written_.insert(*rel);
    const Status written =
        writer_.write(in, entry, *rel, target ? target->c_str() : nullptr, stats.bytes);
    if (!written) return member_error(name, written.error());
    return {};
  }

  Status finish() { return writer_.finish(); }

 private:
  // True when the member was a whiteout (applied here, nothing to write).
  Result<bool> handle_whiteout(const std::string& name, const std::string& rel) {
    const auto [parent, last] = split_last(rel);
    if (!last.starts_with(kWhiteoutPrefix)) return false;
    if (last == kOpaqueMarker) {
      if (auto st = clear_dir(parent); !st) return member_error(name, st.error());
      return true;
    }
    if (last.starts_with(kWhiteoutMetaPrefix)) return true;  // aufs bookkeeping, nothing to hide
    const std::string hidden = last.substr(kWhiteoutPrefix.size());
    if (hidden.empty() || hidden == "." || hidden == "..")
      return refused(name, "a whiteout of '" + hidden + "'");
    auto dir = root_.open_dir(parent);
    if (!dir) return true;  // nothing below a missing dir to hide
    if (auto st = remove_at(dir->get(), hidden); !st) return member_error(name, st.error());
    return true;
  }

  // An opaque dir hides what earlier layers put there, not what this layer adds.
  Status clear_dir(const std::string& parent) {
    auto dir = root_.open_dir(parent);
    if (!dir) return {};
    auto names = names_in(dir->get());
    if (!names) return names.error();
    for (const auto& child : *names) {
      if (written_.count(parent.empty() ? child : parent + "/" + child)) continue;
      if (auto st = remove_at(dir->get(), child); !st) return st;
    }
    return {};
  }

  const RootedDir& root_;
  MemberWriter writer_;
  std::set<std::string> written_;
};

Result<archive_io::Reader> open_reader(const fs::path& tar) {
  archive_io::Reader reader = archive_io::tar_reader();
  if (!archive_io::open_file(reader.get(), tar)) {
    return archive_io::error("open layer", reader.get(), tar.string());
  }
  return reader;
}

}  // namespace

Result<LayerStats> apply_layer(const fs::path& tar, const fs::path& rootfs, IdShift shift,
                               const LayerProgressFn& progress) {
  auto reader = open_reader(tar);
  if (!reader) return reader.error();
  auto root = RootedDir::open(rootfs);
  if (!root) return root.error();
  root->own_new_dirs(shift.uid, shift.gid);
  LayerApplier layer(*root, shift);
  LayerStats stats;
  archive_entry* entry = nullptr;
  for (;;) {
    const int rc = archive_read_next_header(reader->get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return archive_io::error("read layer", reader->get(), tar.string());
    }
    if (auto st = layer.apply(reader->get(), entry, stats); !st) return st.error();
    if (++stats.entries % kProgressEvery == 0 && progress) progress(stats);
  }
  if (auto st = layer.finish(); !st) return st.error();
  return stats;
}

}  // namespace abx::templates
