// The daemon is a program of its own, abx-daemon, beside abx (the build dir,
// PREFIX/bin): the CLI then starts without loading the daemon's libraries.
// `abx serve` and the CLI's auto-start exec it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::cli {

// <dir of /proc/self/exe>/abx-daemon; a one-line error naming it when it is missing.
Result<std::filesystem::path> daemon_binary();

// Replaces this process with `abx-daemon serve ARGS…`; returns only the error
// of a failed exec.
Error exec_daemon(const std::filesystem::path& binary, const std::vector<std::string>& args);

}  // namespace abx::cli
