// E2B's sandbox network settings (`network` and `allow_internet_access` on
// create, the body of PUT /sandboxes/{id}/network) validated into the
// egress policy the runtime, the DNS forwarder and the egress proxy enforce,
// plus the JSON the sandbox's info shows (never a password or CA).
#pragma once

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "egress/policy.h"

namespace abx::daemon {

struct NetworkSettings {
  bool allow_internet_access = true;
  egress::Policy policy;  // as given; effective() folds in allow_internet_access
  // The validated request, normalized (host names lower case), as stored.
  nlohmann::json stored = nlohmann::json::object();

  // allow_internet_access=false is denyOut 0.0.0.0/0 (E2B's words).
  egress::Policy effective() const;
  // For the sandbox's info: what was asked for, without secrets.
  nlohmann::json shown() const;
};

// `network` may be null (absent). Errors read "network.allowOut[1]: …".
Result<NetworkSettings> parse_network(const nlohmann::json& network, bool allow_internet_access);

// New settings from the API: no rule may set a header the proxy must own
// (egress::forbidden_rule_header: Host, Content-Length, …). Apart from
// parse_network so that rules stored before this check still load on restart
// (their policy must not fall away); the proxy refuses their requests instead.
Status check_new_rules(const egress::Policy& policy);

// PUT /sandboxes/{id}/network: the egress fields replace the old ones
// entirely (omitted ones are cleared, as E2B does); allowPublicTraffic,
// maskRequestHost and httpsPorts are not egress and stay as they were.
// New settings: check_new_rules applies.
Result<NetworkSettings> parse_network_update(const std::string& body,
                                             const NetworkSettings& current);

}  // namespace abx::daemon
