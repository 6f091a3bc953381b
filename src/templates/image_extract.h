// Finds the image a user named: an OCI layout dir as it is, or a tar (an
// oci-archive or a docker-save tar) unpacked into a scratch dir first.
#pragma once

#include <filesystem>

#include "common/error.h"

namespace abx::templates::image {

namespace fs = std::filesystem;

// The canonical dir the image is in: `source` itself, or `scratch` (an existing empty dir)
// with the tar extracted into it; a tar of a layout's directory ("img/index.json") has the
// image one level down.
Result<fs::path> locate_image(const fs::path& source, const fs::path& scratch);

}  // namespace abx::templates::image
