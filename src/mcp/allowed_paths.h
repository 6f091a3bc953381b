// Confining upload/download to the host directories the user allowed, so a
// prompt-injected agent cannot copy ~/.ssh into a sandbox or write outside.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::mcp {

// The invoking user's home directories, canonical: $HOME and the passwd
// entry's home (they differ when an editor starts us with another HOME).
std::vector<std::filesystem::path> user_homes();

// The canonical form of each directory (each must exist). `/`, a home in
// `homes` and a directory holding one are refused: allowing them would hand
// the agent ~/.ssh and every other credential of the user.
Result<std::vector<std::filesystem::path>> checked_allow_dirs(
    const std::vector<std::string>& dirs, const std::vector<std::filesystem::path>& homes);

// `host_path` (relative to the cwd) with every symlink resolved, when that
// lies under one of `allowed`; else an error naming the allowed directories.
Result<std::filesystem::path> allowed_host_path(const std::string& host_path,
                                                const std::vector<std::filesystem::path>& allowed);

}  // namespace abx::mcp
