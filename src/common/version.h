// This build's version: the project's number (CMakeLists.txt) and the commit
// it was built from, as `abx --version`, `abx version` and the daemon report.
#pragma once

#include <string>

namespace abx::version {

inline constexpr const char* kNumber = ABX_VERSION;

// `git describe` of the source tree at build time ("3945b055481f",
// "…-dirty"), or "unknown" when it was built outside git.
const char* commit();

// "0.1.0 (commit 3945b055481f)"
std::string text();

}  // namespace abx::version
