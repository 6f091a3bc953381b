// The links of sandbox networks, through rtnetlink (libnl-route-3): a veth
// pair per sandbox, its host end in the daemon's namespace and its other
// end, eth0, in the sandbox's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::runtime::net_links {

// A veth pair: `host_name` here, "eth0" in the namespace `net_ns_fd` names.
Status create_veth(const std::string& host_name, int net_ns_fd);

// The host end: IPv6 off (no link-local address to reach the host by), the
// gateway address on a /30, up.
Status configure_host_end(const std::string& name, uint32_t gateway);

// Inside the sandbox's namespace: IPv6 off but on loopback, eth0 up with `address`/30 and a
// default route via `gateway`. Runs on a thread of its own (setns).
Status configure_inside(int net_ns_fd, uint32_t address, uint32_t gateway);

// ENODEV-free: a link already gone is no error.
Status delete_link(const std::string& name);

// The bytes a link of this namespace received and sent (the kernel's 64-bit
// counters).
struct Counters {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
};
Result<Counters> counters(const std::string& name);

// Names of the links in this namespace that start with `prefix`.
Result<std::vector<std::string>> links_with_prefix(const std::string& prefix);

}  // namespace abx::runtime::net_links
