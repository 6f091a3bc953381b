// The files a Sandboxfile build may COPY: a directory the daemon unpacked
// from the client's tar. Nothing named by a step may lead outside it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::templates::build_context {

namespace fs = std::filesystem;

// Unpacks a tar (as the CLI and SDK send it) into `dir`, refusing absolute
// paths and `..`; symlinks in it are followed only inside `dir` (rooted_dir.h).
// Owners are not kept, nor set-id bits unless `keep_set_id` (a private dir).
Status extract(const fs::path& tar, const fs::path& dir, bool keep_set_id = false);

// extract() into `dir` (created), then the text of the Sandboxfile at
// `sandboxfile` inside it (a missing "Sandboxfile" falls back to "Dockerfile").
Result<std::string> unpack(const fs::path& tar, const fs::path& dir,
                           const std::string& sandboxfile);

// The context paths a COPY source names (wildcards in the last components
// expanded, sorted), each checked to stay inside the context.
Result<std::vector<fs::path>> expand(const fs::path& context, const std::string& source);

// The file `name` (FROM's image archive) names in the context, every symlink
// resolved and checked to stay inside it.
Result<fs::path> file_inside(const fs::path& context, const std::string& name);

// A digest of the paths, modes, link targets and contents below `paths`, so
// an unchanged COPY hits the layer cache and a changed file does not.
Result<std::string> digest(const fs::path& context, const std::vector<fs::path>& paths);

}  // namespace abx::templates::build_context
