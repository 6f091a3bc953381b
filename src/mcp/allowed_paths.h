// Confining upload/download to the host directories the user allowed, so a
// prompt-injected agent cannot copy ~/.ssh into a sandbox or write outside.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::mcp {

// The canonical form of each directory (each must exist).
Result<std::vector<std::filesystem::path>> canonical_dirs(const std::vector<std::string>& dirs);

// `host_path` (relative to the cwd) with every symlink resolved, when that
// lies under one of `allowed`; else an error naming the allowed directories.
Result<std::filesystem::path> allowed_host_path(const std::string& host_path,
                                                const std::vector<std::filesystem::path>& allowed);

}  // namespace abx::mcp
