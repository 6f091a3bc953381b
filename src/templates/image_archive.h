// Unpacks a container image (an OCI image layout, an oci-archive tar or a
// `docker save` tar) onto a template's rootfs dir, layer by layer, and reads
// the defaults its config gives processes (env, working dir, user).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "common/error.h"
#include "templates/layer.h"

namespace abx::templates {

namespace fs = std::filesystem;

// What an image's config says the template's processes should get by default.
// Where a pushed template keeps its start and ready commands (config.Labels).
inline constexpr const char* kStartCmdLabel = "org.agent-sandbox.start-cmd";
inline constexpr const char* kReadyCmdLabel = "org.agent-sandbox.ready-cmd";

struct ImageConfig {
  std::map<std::string, std::string> env;  // from config.Env ("K=V" entries)
  std::string workdir;                     // config.WorkingDir, "" if unset
  std::string user;  // config.User as written ("1000", "app", "1000:1000"), "" if unset
  // From the labels abx's own push writes (kStartCmdLabel, kReadyCmdLabel): an image's Cmd
  // is not a service to wait for (python:3's is an interactive python3).
  std::string start_cmd;
  std::string ready_cmd;
  size_t layers = 0;   // how many layers were applied
  std::string format;  // "oci layout" or "docker save"
};

// Unpacks the image at `source` onto `rootfs` (an existing, empty, canonical dir),
// applying its layers bottom-up with apply_layer (so whiteouts delete what lower
// layers made) and shifting owners by `shift`. `source` is one of:
//  - an OCI image layout directory (oci-layout + index.json + blobs/sha256/...),
//  - a tar of such a directory (an "oci-archive"),
//  - a `docker save` tar (manifest.json with Config and Layers; the newer docker
//    save tars that are OCI layouts with a manifest.json too are read as docker save).
// A tar is first extracted into `scratch` (an existing empty dir the caller removes).
// With several manifests in an index, the one whose platform matches the host
// (linux + the host's GOARCH name) is picked, else the only one; nested indexes
// are followed. Blob sizes are checked against their descriptors, digests are
// not (that would need a hash library this project does not link).
Result<ImageConfig> unpack_image(const fs::path& source, const fs::path& scratch,
                                 const fs::path& rootfs, IdShift shift,
                                 const LayerProgressFn& progress = {});

}  // namespace abx::templates
