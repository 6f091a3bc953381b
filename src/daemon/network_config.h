// The `network` section of the daemon's config file: whether sandboxes get
// networks, the address pool, and private ranges an admin opens.
#pragma once

#include <filesystem>

#include "common/error.h"
#include "egress/policy.h"
#include "runtime/runtime.h"

namespace abx::daemon {

// {"network": {"enabled": true, "pool": "10.200.0.0/16", "openPrivate": ["10.1.2.0/24"]}};
// a missing file or section keeps the defaults.
Result<runtime::NetworkConfig> load_network_config(const std::filesystem::path& file);

// `registries.openPrivate` of the same file: private CIDRs a registry that an
// API caller names (push, pull, FROM) may resolve to; none by default.
Result<std::vector<egress::Cidr>> load_registry_open_private(const std::filesystem::path& file);

}  // namespace abx::daemon
