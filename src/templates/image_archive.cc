#include "templates/image_archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace abx::templates {
namespace {

using json = nlohmann::json;

constexpr const char* kStep = "import image";
constexpr const char* kOciFormat = "oci layout";
constexpr const char* kDockerFormat = "docker save";
constexpr const char* kIndexFile = "index.json";
constexpr const char* kDockerManifestFile = "manifest.json";
constexpr int kMaxIndexDepth = 8;  // deeper nesting is a loop or garbage, not an image
// Indexes, manifests and configs are small; this keeps a mislabelled layer from being parsed.
constexpr uintmax_t kMaxJsonBytes = 16 << 20;
constexpr size_t kReadBlock = 1 << 16;

using Reader = std::unique_ptr<archive, decltype(&archive_read_free)>;
using Writer = std::unique_ptr<archive, decltype(&archive_write_free)>;

Error invalid(std::string detail) { return Error{kStep, EINVAL, std::move(detail)}; }
Error missing(std::string detail) { return Error{kStep, ENOENT, std::move(detail)}; }

Error not_an_image(const fs::path& source) {
  return invalid("'" + source.string() +
                 "' is neither an OCI image layout (no index.json) nor a docker-save archive (no "
                 "manifest.json)");
}

// The architecture as OCI platforms (and Go's GOARCH) spell it.
constexpr const char* host_goarch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__i386__)
  return "386";
#elif defined(__arm__)
  return "arm";
#else
  return "unknown";
#endif
}

std::string host_platform() { return std::string("linux/") + host_goarch(); }

// "./a/b" → "a/b", "." → ""; nullopt for absolute paths and any "..", which
// would leave the dir the path is meant to stay in.
std::optional<std::string> relative_inside(const std::string& raw) {
  if (raw.empty() || raw.front() == '/') return std::nullopt;
  std::string out;
  for (const fs::path& part : fs::path(raw)) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return std::nullopt;
    out += (out.empty() ? "" : "/") + part.string();
  }
  return out;
}

bool is_within(const fs::path& path, const fs::path& dir) {
  return std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end();
}

// "sha256:<64 hex>" → "blobs/sha256/<hex>"; nullopt for anything else, which
// also keeps a digest from naming a path out of the image.
std::optional<std::string> blob_rel_path(const std::string& digest) {
  const size_t colon = digest.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string algorithm = digest.substr(0, colon);
  const std::string hex = digest.substr(colon + 1);
  const size_t want = algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
  const auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (want == 0 || hex.size() != want || !std::all_of(hex.begin(), hex.end(), is_hex)) {
    return std::nullopt;
  }
  return "blobs/" + algorithm + "/" + hex;
}

struct Descriptor {
  std::string media_type;
  std::string digest;
  int64_t size = -1;         // -1: the descriptor does not say
  std::string platform;      // "linux/amd64"; "" when the index does not say
  std::string ref_name;      // the tag (org.opencontainers.image.ref.name)
  bool attestation = false;  // buildx provenance/SBOM, not a runnable image
};

// Throws json::exception on a malformed entry; callers turn that into an Error.
Descriptor descriptor_from(const json& entry) {
  Descriptor out;
  out.media_type = entry.value("mediaType", "");
  out.digest = entry.value("digest", "");
  out.size = entry.value("size", int64_t{-1});
  if (auto platform = entry.find("platform"); platform != entry.end() && platform->is_object()) {
    const std::string os = platform->value("os", "");
    out.platform = os + "/" + platform->value("architecture", "");
    out.attestation = os == "unknown";
  }
  if (auto notes = entry.find("annotations"); notes != entry.end() && notes->is_object()) {
    out.ref_name = notes->value("org.opencontainers.image.ref.name", "");
    out.attestation |= notes->value("vnd.docker.reference.type", "") == "attestation-manifest";
  }
  return out;
}

bool is_index_type(const std::string& media_type) {
  return media_type == "application/vnd.oci.image.index.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.list.v2+json";
}

bool is_manifest_type(const std::string& media_type) {
  return media_type.empty() ||  // mediaType was optional in early layouts
         media_type == "application/vnd.oci.image.manifest.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.v2+json";
}

Result<json> read_json(const fs::path& path, const std::string& what) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return Error{kStep, ec.value(), "cannot read " + what + " (" + path.string() + ")"};
  if (size > kMaxJsonBytes) {
    return invalid(what + " is " + std::to_string(size) +
                   " bytes, too big to be JSON; the image is damaged");
  }
  std::ifstream in(path);
  json parsed = json::parse(in, nullptr, false);
  if (parsed.is_discarded()) return invalid(what + " is not valid JSON; the image is damaged");
  return parsed;
}

// The image's root dir (canonical). Every path taken from the image's JSON is
// checked to stay inside it, symlinks included.
class ImageDir {
 public:
  explicit ImageDir(fs::path root) : root_(std::move(root)) {}
  const fs::path& root() const { return root_; }

  // `what` names the file in errors: "layer 'abc/layer.tar'".
  Result<fs::path> file(const std::string& rel, const std::string& what) const {
    if (!relative_inside(rel)) {
      return invalid(what + " points outside the image; refusing to import it");
    }
    std::error_code ec;
    const fs::path real = fs::canonical(root_ / rel, ec);
    if (ec) return missing(what + " is missing from the image; export the image again");
    if (!is_within(real, root_)) {
      return invalid(what + " is a symlink out of the image; refusing to import it");
    }
    if (!fs::is_regular_file(real, ec)) {
      return invalid(what + " is not a file; the image is damaged");
    }
    return real;
  }

  // `what` is the blob's role: "layer blob", "config blob".
  Result<fs::path> blob(const Descriptor& descriptor, const std::string& what) const {
    const auto rel = blob_rel_path(descriptor.digest);
    if (!rel) {
      return invalid(what + " has a malformed digest '" + descriptor.digest +
                     "' (want sha256:<64 hex>); refusing to import it");
    }
    const std::string named = what + " " + descriptor.digest;
    auto path = file(*rel, named);
    if (!path) return path;
    std::error_code ec;
    const uintmax_t size = fs::file_size(*path, ec);
    if (descriptor.size >= 0 && size != static_cast<uintmax_t>(descriptor.size)) {
      return invalid(named + " has " + std::to_string(size) + " bytes but the image says " +
                     std::to_string(descriptor.size) +
                     "; it was copied incompletely, export it again");
    }
    return path;
  }

  Result<json> blob_json(const Descriptor& descriptor, const std::string& what) const {
    auto path = blob(descriptor, what);
    if (!path) return path.error();
    return read_json(*path, what + " " + descriptor.digest);
  }

 private:
  fs::path root_;
};

Result<std::vector<Descriptor>> descriptors_of(const json& doc, const char* key,
                                               const std::string& what) {
  if (!doc.is_object() || !doc.contains(key) || !doc.at(key).is_array()) {
    return invalid(what + " has no \"" + key + "\" list; the image is damaged");
  }
  std::vector<Descriptor> out;
  try {
    for (const json& entry : doc.at(key)) out.push_back(descriptor_from(entry));
  } catch (const json::exception& e) {
    return invalid(what + " has a malformed \"" + key + "\" entry (" + e.what() + ")");
  }
  return out;
}

Result<Descriptor> config_descriptor(const json& manifest, const std::string& what) {
  if (!manifest.is_object() || !manifest.contains("config")) {
    return invalid(what + " has no config; it is not an image manifest");
  }
  try {
    return descriptor_from(manifest.at("config"));
  } catch (const json::exception& e) {
    return invalid(what + " has a malformed config entry (" + e.what() + ")");
  }
}

// Flattens the index tree into its image manifests, following nested indexes
// (docker's containerd store saves an index whose one entry is the real index).
Status collect_manifests(const ImageDir& image, const json& index, const std::string& what,
                         int depth, std::vector<Descriptor>& found) {
  if (depth > kMaxIndexDepth) {
    return invalid(what + " nests indexes too deep; the image is damaged");
  }
  auto entries = descriptors_of(index, "manifests", what);
  if (!entries) return entries.error();
  for (const Descriptor& entry : *entries) {
    if (is_index_type(entry.media_type)) {
      auto nested = image.blob_json(entry, "index");
      if (!nested) return nested.error();
      auto st = collect_manifests(image, *nested, "index " + entry.digest, depth + 1, found);
      if (!st) return st;
      continue;
    }
    const bool seen = std::any_of(found.begin(), found.end(),
                                  [&](const Descriptor& d) { return d.digest == entry.digest; });
    if (is_manifest_type(entry.media_type) && !entry.attestation && !seen) found.push_back(entry);
  }
  return {};
}

std::string describe(const Descriptor& manifest) {
  if (!manifest.platform.empty()) return manifest.platform;
  if (!manifest.ref_name.empty()) return "tag '" + manifest.ref_name + "'";
  return manifest.digest.substr(0, 19);  // "sha256:" + 12 hex, as docker shortens ids
}

std::string describe_all(const std::vector<Descriptor>& manifests) {
  std::string out;
  for (const Descriptor& d : manifests) out += (out.empty() ? "" : ", ") + describe(d);
  return out;
}

Result<Descriptor> choose_manifest(const std::vector<Descriptor>& found) {
  const std::string host = host_platform();
  // Several entries for the host (variants, tags of one image): the first is as good as any.
  for (const Descriptor& d : found) {
    if (d.platform == host) return d;
  }
  if (found.size() == 1) return found.front();
  if (found.empty()) return invalid("index.json lists no image manifest; the layout is empty");
  const bool any_platform = std::any_of(found.begin(), found.end(),
                                        [](const Descriptor& d) { return !d.platform.empty(); });
  if (!any_platform) {
    return invalid("the layout holds " + std::to_string(found.size()) + " images (" +
                   describe_all(found) + ") and none names its platform; copy the one to import " +
                   "into a layout of its own");
  }
  return invalid("the image has no manifest for " + host + " (it has: " + describe_all(found) +
                 "); copy the one to import into a layout of its own");
}

struct ImagePlan {
  fs::path config;
  std::vector<fs::path> layers;  // bottom first
  std::string format;
};

Result<ImagePlan> plan_oci_layout(const ImageDir& image) {
  auto index = read_json(image.root() / kIndexFile, kIndexFile);
  if (!index) return index.error();
  std::vector<Descriptor> found;
  if (auto st = collect_manifests(image, *index, kIndexFile, 0, found); !st) return st.error();
  auto chosen = choose_manifest(found);
  if (!chosen) return chosen.error();
  auto manifest = image.blob_json(*chosen, "manifest");
  if (!manifest) return manifest.error();
  const std::string what = "manifest " + chosen->digest;
  auto config = config_descriptor(*manifest, what);
  if (!config) return config.error();
  auto layers = descriptors_of(*manifest, "layers", what);
  if (!layers) return layers.error();
  ImagePlan plan;
  plan.format = kOciFormat;
  auto config_path = image.blob(*config, "config blob");
  if (!config_path) return config_path.error();
  plan.config = *config_path;
  for (const Descriptor& layer : *layers) {
    auto path = image.blob(layer, "layer blob");
    if (!path) return path.error();
    plan.layers.push_back(*path);
  }
  return plan;
}

struct DockerEntry {
  std::string config;
  std::vector<std::string> layers;
};

std::string repo_tags(const json& manifest) {
  std::string out;
  for (const json& entry : manifest) {
    const json tags = entry.is_object() ? entry.value("RepoTags", json::array()) : json::array();
    const std::string first = tags.is_array() && !tags.empty() && tags[0].is_string()
                                  ? tags[0].get<std::string>()
                                  : "untagged";
    out += (out.empty() ? "" : ", ") + first;
  }
  return out;
}

Result<DockerEntry> docker_entry(const json& manifest) {
  if (!manifest.is_array() || manifest.empty()) {
    return invalid("manifest.json lists no image; the archive is damaged");
  }
  if (manifest.size() > 1) {
    return invalid("the archive holds " + std::to_string(manifest.size()) + " images (" +
                   repo_tags(manifest) + "); save one image per archive: docker save IMAGE:TAG");
  }
  DockerEntry out;
  try {
    out.config = manifest[0].at("Config").get<std::string>();
    out.layers = manifest[0].at("Layers").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return invalid(std::string("manifest.json is not a docker-save manifest (") + e.what() + ")");
  }
  return out;
}

Result<ImagePlan> plan_docker_save(const ImageDir& image) {
  auto manifest = read_json(image.root() / kDockerManifestFile, kDockerManifestFile);
  if (!manifest) return manifest.error();
  auto entry = docker_entry(*manifest);
  if (!entry) return entry.error();
  ImagePlan plan;
  plan.format = kDockerFormat;
  auto config = image.file(entry->config, "config '" + entry->config + "'");
  if (!config) return config.error();
  plan.config = *config;
  for (const std::string& layer : entry->layers) {
    auto path = image.file(layer, "layer '" + layer + "'");
    if (!path) return path.error();
    plan.layers.push_back(*path);
  }
  return plan;
}

std::string string_or_empty(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? "" : it->get<std::string>();
}

void add_env(const std::string& entry, std::map<std::string, std::string>& env) {
  const size_t eq = entry.find('=');
  if (eq == std::string::npos || eq == 0) return;  // "K=V" is the only form configs use
  env[entry.substr(0, eq)] = entry.substr(eq + 1);
}

// The process defaults live in the config's "config" object (both OCI and docker).
Result<ImageConfig> config_from(const json& doc) {
  if (!doc.is_object()) {
    return invalid("the image config is not a JSON object; the image is damaged");
  }
  ImageConfig out;
  const auto defaults = doc.find("config");
  if (defaults == doc.end() || !defaults->is_object()) return out;
  try {
    if (const auto env = defaults->find("Env"); env != defaults->end() && !env->is_null()) {
      for (const json& entry : *env) add_env(entry.get<std::string>(), out.env);
    }
    out.workdir = string_or_empty(*defaults, "WorkingDir");
    out.user = string_or_empty(*defaults, "User");
  } catch (const json::exception& e) {
    return invalid(std::string("the image config is malformed (") + e.what() + ")");
  }
  return out;
}

// libarchive may have no text for an error; std::string must not get a null.
std::string archive_text(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "unknown libarchive error";
}

int errno_of(archive* a) { return archive_errno(a) > 0 ? archive_errno(a) : EIO; }

Status copy_data(archive* in, archive* out, const fs::path& source) {
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  for (;;) {
    const int rc = archive_read_data_block(in, &block, &size, &offset);
    if (rc == ARCHIVE_EOF) return {};
    if (rc != ARCHIVE_OK) {
      return Error{kStep, EIO,
                   "reading '" + source.string() + "' failed (" + archive_text(in) +
                       "); copy the archive again"};
    }
    if (archive_write_data_block(out, block, size, offset) != ARCHIVE_OK) {
      return Error{kStep, errno_of(out),
                   std::string("writing the unpacked image failed: ") + archive_text(out)};
    }
  }
}

// Only what an image archive holds is written: files, dirs, symlinks (old
// docker save links repeated layers). Names stay inside `scratch`.
Status extract_member(archive* in, archive* out, archive_entry* entry, const fs::path& source,
                      const fs::path& scratch) {
  const mode_t type = archive_entry_filetype(entry);
  if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) return {};
  const std::string name = archive_entry_pathname(entry);
  const auto rel = relative_inside(name);
  if (!rel) {
    return invalid("'" + source.string() + "' holds '" + name +
                   "', a path outside the archive; refusing to import it");
  }
  if (rel->empty()) return {};
  archive_entry_set_pathname(entry, (scratch / *rel).c_str());
  if (const char* link = archive_entry_hardlink(entry)) {
    const auto target = relative_inside(link);
    if (!target || target->empty()) {
      return invalid("'" + source.string() + "' links '" + name + "' to '" + link +
                     "', outside the archive; refusing to import it");
    }
    archive_entry_set_hardlink(entry, (scratch / *target).c_str());
  }
  if (archive_write_header(out, entry) != ARCHIVE_OK) {
    return Error{kStep, errno_of(out), "cannot unpack '" + name + "': " + archive_text(out)};
  }
  if (archive_entry_size(entry) > 0) {
    if (auto st = copy_data(in, out, source); !st) return st;
  }
  if (archive_write_finish_entry(out) != ARCHIVE_OK) {
    return Error{kStep, EIO, "cannot unpack '" + name + "': " + archive_text(out)};
  }
  return {};
}

Error not_a_tar(const fs::path& source, const std::string& why) {
  return invalid("'" + source.string() + "' is neither a directory nor a tar archive (" + why +
                 "); give an OCI image layout, an oci-archive or a docker-save tar");
}

Writer scratch_writer() {
  Writer writer(archive_write_disk_new(), archive_write_free);
  // No owners or special bits: the scratch copy is only read back by this code.
  archive_write_disk_set_options(writer.get(), ARCHIVE_EXTRACT_UNLINK |
                                                   ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                   ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  return writer;
}

// `scratch` must be canonical: the symlink check looks at every component.
Status extract_archive(const fs::path& source, const fs::path& scratch) {
  Reader reader(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(reader.get());
  archive_read_support_format_gnutar(reader.get());
  archive_read_support_filter_all(reader.get());
  if (archive_read_open_filename(reader.get(), source.c_str(), kReadBlock) != ARCHIVE_OK) {
    // libarchive may already have looked at the first bytes and found no tar
    // (its ARCHIVE_ERRNO_FILE_FORMAT, which is EILSEQ and not in its public header).
    if (archive_errno(reader.get()) == EILSEQ) {
      return not_a_tar(source, archive_text(reader.get()));
    }
    return Error{kStep, errno_of(reader.get()),
                 "cannot read '" + source.string() + "': " + archive_text(reader.get())};
  }
  Writer writer = scratch_writer();
  archive_entry* entry = nullptr;
  for (bool first = true;; first = false) {
    const int rc = archive_read_next_header(reader.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      const std::string why = archive_text(reader.get());
      if (first) return not_a_tar(source, why);
      return invalid("'" + source.string() + "' is a damaged tar archive (" + why + ")");
    }
    auto st = extract_member(reader.get(), writer.get(), entry, source, scratch);
    if (!st) return st;
  }
  if (archive_write_close(writer.get()) != ARCHIVE_OK) {
    return Error{kStep, EIO, std::string("unpacking failed: ") + archive_text(writer.get())};
  }
  return {};
}

bool holds_image(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kIndexFile, ec) || fs::exists(dir / kDockerManifestFile, ec);
}

// A tar of a layout's directory ("img/index.json") has the image one level down.
Result<fs::path> find_image_root(const fs::path& dir, const fs::path& source) {
  if (holds_image(dir)) return dir;
  std::error_code ec;
  std::vector<fs::path> children;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    children.push_back(it->path());
  }
  if (children.size() == 1 && fs::is_directory(fs::symlink_status(children[0], ec)) &&
      holds_image(children[0])) {
    return children[0];
  }
  return not_an_image(source);
}

// The canonical dir the image is in: `source` itself, or `scratch` with the tar extracted.
Result<fs::path> locate_image(const fs::path& source, const fs::path& scratch) {
  std::error_code ec;
  const fs::file_status status = fs::status(source, ec);
  if (!fs::exists(status)) {
    return missing("'" + source.string() +
                   "' does not exist; give an OCI image layout dir or an image tar");
  }
  fs::path dir = source;
  if (!fs::is_directory(status)) {
    dir = fs::canonical(scratch, ec);
    if (ec) return Error{kStep, ec.value(), "scratch dir " + scratch.string()};
    if (auto st = extract_archive(source, dir); !st) return st.error();
  }
  const fs::path real = fs::canonical(dir, ec);
  if (ec) return Error{kStep, ec.value(), dir.string()};
  return find_image_root(real, source);
}

Status apply_layers(const std::vector<fs::path>& layers, const fs::path& rootfs, IdShift shift,
                    const LayerProgressFn& progress) {
  LayerStats done;
  for (size_t i = 0; i < layers.size(); ++i) {
    // apply_layer counts per layer; whoever watches wants the running total.
    LayerProgressFn running;
    if (progress) {
      running = [&](const LayerStats& now) {
        progress(LayerStats{done.entries + now.entries, done.bytes + now.bytes});
      };
    }
    auto stats = apply_layer(layers[i], rootfs, shift, running);
    if (!stats) {
      const Error& e = stats.error();
      return Error{"image layer " + std::to_string(i + 1) + " of " + std::to_string(layers.size()) +
                       ": " + e.step,
                   e.errnum, e.detail};
    }
    done.entries += stats->entries;
    done.bytes += stats->bytes;
  }
  return {};
}

}  // namespace

Result<ImageConfig> unpack_image(const fs::path& source, const fs::path& scratch,
                                 const fs::path& rootfs, IdShift shift,
                                 const LayerProgressFn& progress) {
  auto root = locate_image(source, scratch);
  if (!root) return root.error();
  const ImageDir image(*root);
  // Newer docker save tars are OCI layouts too; their manifest.json names the one saved image.
  auto plan = fs::exists(image.root() / kDockerManifestFile) ? plan_docker_save(image)
                                                             : plan_oci_layout(image);
  if (!plan) return plan.error();
  auto config_json = read_json(plan->config, "the image config");
  if (!config_json) return config_json.error();
  auto config = config_from(*config_json);
  if (!config) return config.error();
  if (auto st = apply_layers(plan->layers, rootfs, shift, progress); !st) return st.error();
  config->layers = plan->layers.size();
  config->format = plan->format;
  return config;
}

}  // namespace abx::templates
