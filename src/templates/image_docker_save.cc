// Reads a `docker save` tar's manifest.json: one image's config and layer
// files, named relative to the archive.
#include <string>
#include <vector>

#include "templates/image_dir.h"

namespace abx::templates::image {
namespace {

constexpr const char* kDockerFormat = "docker save";

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

}  // namespace

Result<ImagePlan> plan_docker_save(const ImageDir& image) {
  // Through file(): a symlink planted as manifest.json must not read a host file.
  auto manifest_path = image.file(kDockerManifestFile, kDockerManifestFile);
  if (!manifest_path) return manifest_path.error();
  auto manifest = read_json(*manifest_path, kDockerManifestFile);
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

}  // namespace abx::templates::image
