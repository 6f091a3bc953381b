// Writes a template as an OCI image layout (oci-layout, index.json and
// blobs/sha256/...), so a registry client (skopeo) can push it: one
// uncompressed tar layer blob per template layer, bottom-up, with overlay
// whiteouts turned into OCI ".wh." entries and owners shifted back from the
// sandboxes' id range to the image's own ids.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "templates/member_writer.h"

namespace abx::templates {

namespace fs = std::filesystem;

// What goes into the image config's "config" object.
struct ExportConfig {
  std::map<std::string, std::string> env;
  std::string workdir;
  std::string user;
  int64_t created_ms = 0;
  std::string start_cmd;  // TemplateMeta's, as image labels (kStartCmdLabel, kReadyCmdLabel)
  std::string ready_cmd;
};

// `layers` are template layer dirs, lowest first; `shift` is what was added to
// their owners when they were made (IdShift of sandbox root). `out` must be an
// existing empty dir. `progress` hears one line per layer written.
Status write_oci_layout(const std::vector<fs::path>& layers, const ExportConfig& config,
                        IdShift shift, const fs::path& out,
                        const std::function<void(const std::string&)>& progress);

}  // namespace abx::templates
