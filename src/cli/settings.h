// Where the CLI finds its daemon and key: the environment beats the config
// file; neither set means the local daemon (and its key file).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/config.h"

namespace abx::cli {

inline constexpr const char* kUrlEnv = "ABX_SANDBOX_API_URL";
inline constexpr const char* kKeyEnv = "ABX_SANDBOX_API_KEY";

// $env_name when set and non-empty, else the config's `key`, else nullopt.
std::optional<std::string> pick_setting(const char* env_name, const config::Config& config,
                                        std::string_view key);

}  // namespace abx::cli
