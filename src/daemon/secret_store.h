// Secrets a team keeps in the daemon for the egress proxy to put into
// requests (a network.rules header valued "abx-secret:NAME"): the sandbox
// only ever sees the placeholder. Values are never returned by any API and
// never logged; they live in the state store (the data dir is 0700).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/store.h"

namespace abx::daemon {

class SecretStore {
 public:
  static Result<std::unique_ptr<SecretStore>> open(Store& store);

  // NAME: a letter or '_', then letters, digits, '_' (at most 64); the value
  // one line of at most 8192 bytes (it goes into an HTTP header).
  Status set(const std::string& team, const std::string& name, const std::string& value);
  Status remove(const std::string& team, const std::string& name);  // ENOENT: no such secret
  std::vector<std::string> names(const std::string& team) const;
  std::optional<std::string> get(const std::string& team, const std::string& name) const;

 private:
  explicit SecretStore(Store& store) : store_(store) {}
  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, std::string>> values_;  // team → name → value
};

}  // namespace abx::daemon
