// An image's files once it is a directory (an OCI layout, or a docker-save
// tar unpacked): paths taken from its JSON checked to stay inside it, blobs
// checked against their descriptors' sizes, and the plan its manifests make.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::templates::image {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline constexpr const char* kStep = "import image";
inline constexpr const char* kIndexFile = "index.json";
inline constexpr const char* kDockerManifestFile = "manifest.json";

Error invalid(std::string detail);  // EINVAL under kStep
Error missing(std::string detail);  // ENOENT under kStep
Error not_an_image(const fs::path& source);

// A small JSON file of the image (index, manifest, config); `what` names it in errors.
Result<json> read_json(const fs::path& path, const std::string& what);

struct Descriptor {
  std::string media_type;
  std::string digest;
  int64_t size = -1;         // -1: the descriptor does not say
  std::string platform;      // "linux/amd64"; "" when the index does not say
  std::string ref_name;      // the tag (org.opencontainers.image.ref.name)
  bool attestation = false;  // buildx provenance/SBOM, not a runnable image
};

// The image's root dir (canonical). Every path taken from the image's JSON is
// checked to stay inside it, symlinks included.
class ImageDir {
 public:
  explicit ImageDir(fs::path root) : root_(std::move(root)) {}
  const fs::path& root() const { return root_; }

  // `what` names the file in errors: "layer 'abc/layer.tar'".
  Result<fs::path> file(const std::string& rel, const std::string& what) const;
  // `what` is the blob's role: "layer blob", "config blob".
  Result<fs::path> blob(const Descriptor& descriptor, const std::string& what) const;
  Result<json> blob_json(const Descriptor& descriptor, const std::string& what) const;

 private:
  fs::path root_;
};

// What to apply: the config and the layers, bottom first.
struct ImagePlan {
  fs::path config;
  std::vector<fs::path> layers;
  std::string format;  // "oci layout" or "docker save"
};

// image_oci_layout.cc: index.json → the host's manifest → config and layer blobs.
Result<ImagePlan> plan_oci_layout(const ImageDir& image);
// image_docker_save.cc: manifest.json → config and layer files.
Result<ImagePlan> plan_docker_save(const ImageDir& image);

}  // namespace abx::templates::image
