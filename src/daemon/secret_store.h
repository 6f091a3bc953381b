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

// A secret goes only to the hosts it was stored for: anyone with a team key
// can write a rule naming any host, and must not be able to send the value
// to one of their own.
struct Secret {
  std::string value;
  std::vector<std::string> hosts;  // "api.example.com", "*.example.com"; lower case
};

class SecretStore {
 public:
  static Result<std::unique_ptr<SecretStore>> open(Store& store);

  // NAME: a letter or '_', then letters, digits, '_' (at most 64); the value
  // one line of at most 8192 bytes (it goes into an HTTP header); 1 to 16
  // host names or *.wildcards it may be sent to.
  Status set(const std::string& team, const std::string& name, Secret secret);
  Status remove(const std::string& team, const std::string& name);  // ENOENT: no such secret
  // Name → the hosts it may be sent to (never a value).
  std::map<std::string, std::vector<std::string>> list(const std::string& team) const;
  // The value, if `host` is one the secret may be sent to.
  std::optional<std::string> get(const std::string& team, const std::string& name,
                                 const std::string& host) const;

 private:
  explicit SecretStore(Store& store) : store_(store) {}
  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, Secret>> secrets_;  // team → name → secret
};

}  // namespace abx::daemon
