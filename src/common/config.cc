#include "common/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/fd_io.h"
#include "common/file_replacement.h"

namespace abx::config {
namespace {

std::string to_toml(const std::map<std::string, std::string, std::less<>>& values) {
  toml::table table;
  for (const auto& [key, value] : values) table.insert(key, value);
  std::ostringstream out;
  out << table << "\n";
  return out.str();
}

}  // namespace

const std::vector<std::string_view>& known_keys() {
  static const std::vector<std::string_view> keys = {kApiKey, kApiUrl};
  return keys;
}

bool is_known_key(std::string_view key) {
  const auto& keys = known_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string mask_secret(std::string_view value) {
  constexpr size_t kShown = 4;
  if (value.size() <= kShown) return std::string(value.size(), '*');
  return std::string(value.size() - kShown, '*') + std::string(value.substr(value.size() - kShown));
}

std::string display_value(std::string_view key, std::string_view value) {
  const bool secret = key.ends_with("_key") || key.ends_with("_token");
  return secret ? mask_secret(value) : std::string(value);
}

Result<Config> Config::load(const std::filesystem::path& file) {
  Config config;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return config;
  try {
    auto text = read_file(file);  // not toml::parse_file: its stream is not close-on-exec
    if (!text) return Error{"read config " + file.string(), text.error().errnum, {}};
    const toml::table table = toml::parse(*text, file.string());
    for (const auto& [key, node] : table) {
      if (auto value = node.value<std::string>()) config.values_[std::string(key.str())] = *value;
    }
  } catch (const toml::parse_error& e) {
    return Error::with_message("read config " + file.string() + ": " +
                               std::string(e.description()) + "; fix or delete the file");
  }
  return config;
}

Status Config::save(const std::filesystem::path& file) const {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return Error{"create config dir", ec.value(), file.parent_path().string()};
  return replace_file(file, to_toml(values_), 0600, /*sync=*/true);
}

std::optional<std::string> Config::get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void Config::set(std::string_view key, std::string value) {
  values_[std::string(key)] = std::move(value);
}

bool Config::unset(std::string_view key) {
  auto it = values_.find(key);
  if (it == values_.end()) return false;
  values_.erase(it);
  return true;
}

}  // namespace abx::config
