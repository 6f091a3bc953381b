#include "templates/oci_export.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "common/fd_io.h"
#include "common/sha256.h"
#include "common/unique_fd.h"
#include "templates/archive_io.h"
#include "templates/host_arch.h"
#include "templates/image_archive.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

using nlohmann::json;

constexpr const char* kLayerType = "application/vnd.oci.image.layer.v1.tar";
constexpr const char* kConfigType = "application/vnd.oci.image.config.v1+json";
constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kWhiteoutPrefix = ".wh.";
constexpr const char* kOpaqueMarker = ".wh..wh..opq";
// Ids a sandbox's user namespace maps (sandbox root .. nobody and a little more).
constexpr uint32_t kMappedIds = 65536;
constexpr size_t kCopyBlock = 1 << 16;

using Entry = std::unique_ptr<archive_entry, decltype(&archive_entry_free)>;

Entry new_entry() { return Entry(archive_entry_new(), archive_entry_free); }

// An id of the sandboxes' range back to the image's own; an id outside the
// range (a host file in a layer) becomes root's, as the sandbox sees it.
int64_t unshifted(uint32_t id, uint32_t base) {
  return id >= base && id - base < kMappedIds ? int64_t{id - base} : 0;
}

// overlayfs marks a deleted path with a 0:0 character device.
bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == 0; }

// overlayfs marks a dir that hides the lower layers' dir with an opaque xattr:
// user.overlay.* in layers made by builds (userxattr mounts), trusted.* otherwise.
bool is_opaque(const fs::path& dir) {
  for (const char* name : {"user.overlay.opaque", "trusted.overlay.opaque"}) {
    char value[2] = {};
    if (::lgetxattr(dir.c_str(), name, value, sizeof value) == 1 && value[0] == 'y') return true;
  }
  return false;
}

class LayerTar {
 public:
  LayerTar(const fs::path& root, IdShift shift) : root_(root), shift_(shift) {}

  Status write(const fs::path& tar) {
    writer_ = archive_io::tar_file_writer();
    if (!archive_io::open_file_for_writing(writer_.get(), tar))
      return archive_io::error("export layer", writer_.get(), tar.string());
    std::error_code ec;
    fs::recursive_directory_iterator it(root_, fs::directory_options::none, ec), end;
    if (ec) return Error{"export layer", ec.value(), root_.string()};
    for (; it != end; it.increment(ec)) {
      if (ec) return Error{"export layer", ec.value(), root_.string()};
      if (auto st = add(it->path()); !st) return st;
    }
    if (ec) return Error{"export layer", ec.value(), root_.string()};
    if (archive_write_close(writer_.get()) != ARCHIVE_OK)
      return archive_io::error("export layer", writer_.get(), tar.string());
    return {};
  }

 private:
  Status add(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return Error::from_errno("export layer", path.string());
    const std::string rel = path.lexically_relative(root_).string();
    if (is_whiteout(st)) {
      const fs::path hidden(rel);
      return add_marker(
          (hidden.parent_path() / (kWhiteoutPrefix + hidden.filename().string())).string());
    }
    // Device nodes, sockets: a sandbox gets its own /dev; an image carries none.
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) &&
        !S_ISFIFO(st.st_mode))
      return {};
    Entry entry = new_entry();
    archive_entry_copy_stat(entry.get(), &st);
    archive_entry_set_pathname(entry.get(), rel.c_str());
    archive_entry_set_uid(entry.get(), unshifted(st.st_uid, shift_.uid));
    archive_entry_set_gid(entry.get(), unshifted(st.st_gid, shift_.gid));
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
      if (n < 0) return Error::from_errno("export layer: readlink", path.string());
      target.resize(static_cast<size_t>(n));
      archive_entry_set_symlink(entry.get(), target.c_str());
    }
    if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
      const auto key = std::pair{st.st_dev, st.st_ino};
      if (auto seen = links_.find(key); seen != links_.end()) {
        archive_entry_set_hardlink(entry.get(), seen->second.c_str());
        archive_entry_set_size(entry.get(), 0);
        return header(entry.get(), rel);
      }
      links_.emplace(key, rel);
    }
    if (auto s = header(entry.get(), rel); !s) return s;
    if (S_ISREG(st.st_mode)) {
      if (auto s = data(path); !s) return s;
    }
    if (S_ISDIR(st.st_mode) && is_opaque(path))
      return add_marker((fs::path(rel) / kOpaqueMarker).string());
    return {};
  }

  // An empty file whose name tells an OCI reader to delete (or hide) something.
  Status add_marker(const std::string& rel) {
    Entry entry = new_entry();
    archive_entry_set_pathname(entry.get(), rel.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    archive_entry_set_size(entry.get(), 0);
    return header(entry.get(), rel);
  }

  Status header(archive_entry* entry, const std::string& rel) {
    if (archive_write_header(writer_.get(), entry) < ARCHIVE_WARN)
      return archive_io::error("export layer", writer_.get(), rel);
    return {};
  }

  // Layers are read-only once made; O_NOFOLLOW still keeps a swapped-in link out.
  Status data(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd.valid()) return Error::from_errno("export layer: open", path.string());
    std::string block(kCopyBlock, '\0');
    for (;;) {
      const ssize_t n = ::read(fd.get(), block.data(), block.size());
      if (n < 0) return Error::from_errno("export layer: read", path.string());
      if (n == 0) return {};
      if (archive_write_data(writer_.get(), block.data(), static_cast<size_t>(n)) != n)
        return archive_io::error("export layer", writer_.get(), path.string());
    }
  }

  fs::path root_;
  IdShift shift_;
  archive_io::Writer writer_{nullptr, archive_write_free};
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
};

struct Blob {
  std::string digest;  // "sha256:<hex>"
  int64_t size = 0;
};

json descriptor(const char* media_type, const Blob& blob) {
  return {{"mediaType", media_type}, {"digest", blob.digest}, {"size", blob.size}};
}

// Moves `file` into blobs/sha256/ under its digest.
Result<Blob> store_blob(const fs::path& out, const fs::path& file) {
  auto hex = sha256_file(file.string());
  if (!hex) return hex.error();
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return Error{"export image", ec.value(), file.string()};
  fs::rename(file, out / "blobs" / "sha256" / *hex, ec);
  if (ec) return Error{"export image", ec.value(), file.string()};
  return Blob{"sha256:" + *hex, static_cast<int64_t>(size)};
}

Result<Blob> json_blob(const fs::path& out, const json& doc) {
  const fs::path temp = out / "blobs" / "sha256" / "json.partial";
  if (auto st = tree::write_text(temp, doc.dump(), 0644); !st) return st.error();
  return store_blob(out, temp);
}

std::string rfc3339(int64_t ms) {
  const time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm utc {};
  gmtime_r(&seconds, &utc);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

json image_config(const ExportConfig& config, const json& diff_ids) {
  json env = json::array();
  for (const auto& [key, value] : config.env) env.push_back(key + "=" + value);
  json process = {{"Env", env}};
  if (!config.workdir.empty()) process["WorkingDir"] = config.workdir;
  if (!config.user.empty()) process["User"] = config.user;
  json labels = json::object();
  if (!config.start_cmd.empty()) labels[kStartCmdLabel] = config.start_cmd;
  if (!config.ready_cmd.empty()) labels[kReadyCmdLabel] = config.ready_cmd;
  if (!labels.empty()) process["Labels"] = labels;
  json doc = {{"architecture", host_goarch()},
              {"os", "linux"},
              {"config", process},
              {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}};
  if (config.created_ms > 0) doc["created"] = rfc3339(config.created_ms);
  return doc;
}

}  // namespace

Status write_oci_layout(const std::vector<fs::path>& layers, const ExportConfig& config,
                        IdShift shift, const fs::path& out,
                        const std::function<void(const std::string&)>& progress) {
  if (auto st = tree::make_dir(out / "blobs", 0755); !st) return st;
  if (auto st = tree::make_dir(out / "blobs" / "sha256", 0755); !st) return st;
  json layer_descriptors = json::array(), diff_ids = json::array();
  for (size_t i = 0; i < layers.size(); ++i) {
    const fs::path partial = out / "blobs" / "sha256" / "layer.partial";
    if (auto st = LayerTar(layers[i], shift).write(partial); !st) return st;
    auto blob = store_blob(out, partial);
    if (!blob) return blob.error();
    // Uncompressed: the blob's digest is its diff id (a registry client compresses on push).
    layer_descriptors.push_back(descriptor(kLayerType, *blob));
    diff_ids.push_back(blob->digest);
    if (progress)
      progress("layer " + std::to_string(i + 1) + " of " + std::to_string(layers.size()) + ": " +
               std::to_string((blob->size + (1 << 19)) >> 20) + " MiB");
  }
  auto config_blob = json_blob(out, image_config(config, diff_ids));
  if (!config_blob) return config_blob.error();
  const json manifest = {{"schemaVersion", 2},
                         {"mediaType", kManifestType},
                         {"config", descriptor(kConfigType, *config_blob)},
                         {"layers", layer_descriptors}};
  auto manifest_blob = json_blob(out, manifest);
  if (!manifest_blob) return manifest_blob.error();
  json entry = descriptor(kManifestType, *manifest_blob);
  entry["platform"] = {{"os", "linux"}, {"architecture", host_goarch()}};
  const json index = {{"schemaVersion", 2},
                      {"mediaType", "application/vnd.oci.image.index.v1+json"},
                      {"manifests", json::array({entry})}};
  if (auto st = tree::write_text(out / "index.json", index.dump(), 0644); !st) return st;
  return tree::write_text(out / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})", 0644);
}

}  // namespace abx::templates
