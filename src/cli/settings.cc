#include "cli/settings.h"

#include <cstdlib>

namespace abx::cli {

std::optional<std::string> pick_setting(const char* env_name, const config::Config& config,
                                        std::string_view key) {
  if (const char* value = std::getenv(env_name); value && *value) return std::string(value);
  auto value = config.get(key);
  if (value && !value->empty()) return value;
  return std::nullopt;
}

}  // namespace abx::cli
