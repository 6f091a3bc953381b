// The user's abx settings: a small TOML file of string keys, written
// atomically with mode 0600 because it can hold an API key.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace abx::config {

inline constexpr std::string_view kApiKey = "sandbox_api_key";
inline constexpr std::string_view kApiUrl = "sandbox_api_url";

const std::vector<std::string_view>& known_keys();
bool is_known_key(std::string_view key);

// "e2b_…1234" style: everything but the last 4 characters hidden.
std::string mask_secret(std::string_view value);
// The value as `config list` shows it: secrets masked, the rest verbatim.
std::string display_value(std::string_view key, std::string_view value);

class Config {
 public:
  // A missing file is an empty config, not an error.
  static Result<Config> load(const std::filesystem::path& file);
  // Writes a temp file beside `file` (0600) and renames it over.
  Status save(const std::filesystem::path& file) const;

  std::optional<std::string> get(std::string_view key) const;
  void set(std::string_view key, std::string value);
  bool unset(std::string_view key);  // false when the key was not set
  const std::map<std::string, std::string, std::less<>>& values() const { return values_; }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace abx::config
