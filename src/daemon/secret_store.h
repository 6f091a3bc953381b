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
#include "egress/policy.h"

namespace abx::daemon {

// A secret goes only to the hosts it was stored for: anyone with a team key
// can write a rule naming any host, and must not be able to send the value
// to one of their own. And only in the headers its owner named: in Origin or
// Referer a server may reflect it back to the sandbox, in Cookie log it.
struct SecretPlaces {
  std::vector<std::string> hosts;    // "api.example.com", "*.example.com"; lower case
  std::vector<std::string> headers;  // "Authorization" (the default); any case
};
struct Secret {
  std::string value;
  SecretPlaces places;
};

class SecretStore {
 public:
  static Result<std::unique_ptr<SecretStore>> open(Store& store);

  // NAME: a letter or '_', then letters, digits, '_' (at most 64); the value
  // one line of at most 8192 bytes (it goes into an HTTP header); 1 to 16
  // host names or *.wildcards it may be sent to; 0 to 16 header names it may
  // be sent in (none: Authorization only), none a rule may not set (Host, …).
  Status set(const std::string& team, const std::string& name, Secret secret);
  Status remove(const std::string& team, const std::string& name);  // ENOENT: no such secret
  // Name → where it may be sent (never a value).
  std::map<std::string, SecretPlaces> list(const std::string& team) const;
  // The value, if `host` is one the secret may be sent to and `header` one it
  // may be sent in.
  std::optional<std::string> get(const std::string& team, const std::string& name,
                                 const std::string& host, const std::string& header) const;
  // A rule that puts secrets in headers their owners did not name: refused
  // when it is made, naming the secret, the header and the ones allowed. A
  // secret not set yet is the proxy's to refuse when a request needs it.
  Status check_rules(const std::string& team, const std::vector<egress::HostRule>& rules) const;

 private:
  explicit SecretStore(Store& store) : store_(store) {}
  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, Secret>> secrets_;  // team → name → secret
};

}  // namespace abx::daemon
