// Reads an OCI image layout: index.json (nested indexes followed) → the
// manifest for the host's platform → its config and layer blobs.
#include <algorithm>
#include <string>
#include <vector>

#include "templates/host_arch.h"
#include "templates/image_dir.h"

namespace abx::templates::image {
namespace {

constexpr const char* kOciFormat = "oci layout";
constexpr int kMaxIndexDepth = 8;  // deeper nesting is a loop or garbage, not an image

std::string host_platform() { return std::string("linux/") + host_goarch(); }

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

}  // namespace

Result<ImagePlan> plan_oci_layout(const ImageDir& image) {
  // Through file(): a symlink planted as index.json must not read a host file.
  auto index_path = image.file(kIndexFile, kIndexFile);
  if (!index_path) return index_path.error();
  auto index = read_json(*index_path, kIndexFile);
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

}  // namespace abx::templates::image
