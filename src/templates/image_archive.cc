#include "templates/image_archive.h"

#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "templates/image_dir.h"
#include "templates/image_extract.h"

namespace abx::templates {
namespace {

using image::invalid;
using image::json;

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
    if (const auto labels = defaults->find("Labels");
        labels != defaults->end() && labels->is_object()) {
      out.start_cmd = string_or_empty(*labels, kStartCmdLabel);
      out.ready_cmd = string_or_empty(*labels, kReadyCmdLabel);
    }
  } catch (const json::exception& e) {
    return invalid(std::string("the image config is malformed (") + e.what() + ")");
  }
  return out;
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
  auto root = image::locate_image(source, scratch);
  if (!root) return root.error();
  const image::ImageDir dir(*root);
  // Newer docker save tars are OCI layouts too; their manifest.json names the one saved image.
  auto plan = fs::exists(dir.root() / image::kDockerManifestFile) ? image::plan_docker_save(dir)
                                                                  : image::plan_oci_layout(dir);
  if (!plan) return plan.error();
  auto config_json = image::read_json(plan->config, "the image config");
  if (!config_json) return config_json.error();
  auto config = config_from(*config_json);
  if (!config) return config.error();
  if (auto st = apply_layers(plan->layers, rootfs, shift, progress); !st) return st.error();
  config->layers = plan->layers.size();
  config->format = plan->format;
  return config;
}

}  // namespace abx::templates
