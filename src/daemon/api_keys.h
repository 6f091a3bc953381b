// API keys the control plane accepts: the local default key (<data>/api_key)
// and extra keys made by `abx keys create` (<data>/api_keys, one per line:
// "<e2b_ key> <created unix seconds> <name>").
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/caller.h"

namespace abx::daemon {

struct ApiKeyEntry {
  std::string key;
  int64_t created_unix = 0;
  std::string name;
};

std::filesystem::path extra_keys_path(const std::filesystem::path& data_dir);
// An absent file is an empty list.
Result<std::vector<ApiKeyEntry>> read_extra_keys(const std::filesystem::path& file);
// Appends a fresh key (the file is created 0600).
Result<ApiKeyEntry> create_extra_key(const std::filesystem::path& file, const std::string& name);

class ApiKeys {
 public:
  ApiKeys(std::string primary, std::filesystem::path extra_file);
  // Who `key` is, or nothing for an unknown key. Re-reads the extra keys when
  // their file changed, so new keys work at once.
  std::optional<Caller> caller_for(const std::string& key);

 private:
  std::string primary_;
  std::filesystem::path extra_file_;
  std::mutex mutex_;
  std::timespec seen_mtime_{};
  std::set<std::string> extra_;
};

}  // namespace abx::daemon
