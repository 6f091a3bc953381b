// Builds a Debian root filesystem as a tar with mmdebstrap, cached by the
// spec's hash so every daemon on the machine (and every test run) builds a
// given spec once.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "common/error.h"
#include "templates/spec.h"

namespace abx::templates {

using ProgressFn = std::function<void(const std::string& line)>;

// $ABX_CACHE_DIR/templates, else $XDG_CACHE_HOME/abx/templates, else ~/.cache/abx/templates.
fs::path cache_dir();

// The cached tar for `spec`, running mmdebstrap first unless it is cached (or
// `no_cache`). Every line mmdebstrap prints goes to `log`; `progress` gets the
// steps and package counts. A failure names the exit code and the last lines.
Result<fs::path> debian_rootfs_tar(const DebianSpec& spec, bool no_cache, const ProgressFn& log,
                                   const ProgressFn& progress);

}  // namespace abx::templates
