// API keys and the teams they belong to. Keys are stored hashed (sha256 of
// the key) in the state store; the key itself is shown once, when made. The
// daemon's own key (<data>/api_key, read by the local CLI) is the default
// team's admin key, added when the store holds no key yet.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/caller.h"
#include "daemon/store.h"

namespace abx::daemon {

struct ApiKeyRecord {
  std::string id;    // "key-<12 hex>": names the key in listings and logs
  std::string hash;  // sha256 hex of the key
  std::string team;
  bool admin = false;
  std::string name;  // a label
  int64_t created_ms = 0;
};

struct NewApiKey {
  ApiKeyRecord record;
  std::string key;  // the secret, returned once
};

// "[a-z0-9][a-z0-9_-]{0,62}", or an error saying so.
Status check_team_name(const std::string& team);

class ApiKeys {
 public:
  // Loads the stored keys. With none stored yet (first start, or an upgrade),
  // adds `primary` as the default team's admin key and imports the plaintext
  // keys an older abx kept in `legacy_file` (as the default team's), then
  // deletes that file.
  static Result<std::shared_ptr<ApiKeys>> open(Store& store, const std::string& primary,
                                               const std::filesystem::path& legacy_file);

  // Who `key` is, or nothing for an unknown or revoked key.
  std::optional<Caller> caller_for(const std::string& key) const;
  // Who the key with this id is (a dashboard session names its key by id, so
  // revoking the key ends the session), or nothing once it is revoked.
  std::optional<Caller> caller_for_id(const std::string& key_id) const;
  Result<NewApiKey> create(const std::string& team, bool admin, const std::string& name);
  std::vector<ApiKeyRecord> list() const;
  // ENOENT for an unknown id; refuses to revoke the last admin key.
  Status revoke(const std::string& id);

 private:
  explicit ApiKeys(Store& store) : store_(store) {}
  Status add(const ApiKeyRecord& record);
  Status import_legacy(const std::filesystem::path& legacy_file);

  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::string, ApiKeyRecord> by_hash_;
};

}  // namespace abx::daemon
