#include "runtime/networks.h"

#include <fcntl.h>
#include <net/if.h>

#include <cstdlib>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "runtime/net_links.h"

namespace abx::runtime {
namespace {

constexpr const char* kPoolFile = "network-pool";  // in the state dir: the pool to reclaim
constexpr const char* kLockDir = "/run/abx/net";

// What max_connections_all is when the config leaves it 0: half the host's
// table (nf_conntrack_max), the other half for the host's own flows; 0 (no
// count) where the kernel does not say.
uint32_t all_sandboxes_cap(const NetworkConfig& config) {
  if (config.max_connections_all) return config.max_connections_all;
  auto text = read_file("/proc/sys/net/netfilter/nf_conntrack_max");
  if (!text) return 0;
  return static_cast<uint32_t>(std::strtoul(text->c_str(), nullptr, 10) / 2);
}

}  // namespace

Networks::Networks(NetPool pool) : pool_(std::move(pool)) {}

Result<std::unique_ptr<Networks>> Networks::open(const NetworkConfig& config,
                                                 const fs::path& state_dir,
                                                 std::vector<std::string>* warnings) {
  const fs::path pool_file = state_dir / kPoolFile;
  auto previous = read_file(pool_file);
  std::string before = previous ? *previous : std::string();
  while (!before.empty() && before.back() == '\n') before.pop_back();
  auto pool = NetPool::claim(config.pool, before, kLockDir);
  if (!pool) return pool.error();
  std::vector<egress::Cidr> opened;
  for (const std::string& text : config.open_private) {
    auto cidr = egress::parse_cidr(text);
    if (!cidr)
      return Error{"network config", EINVAL,
                   "'" + text + "' in network.open_private is not an IPv4 address or CIDR"};
    opened.push_back(*cidr);
  }
  auto forwarding = ForwardingHold::acquire(kLockDir, warnings);
  if (!forwarding) return forwarding.error();
  std::unique_ptr<Networks> networks(new Networks(std::move(*pool)));
  networks->forwarding_ = std::move(*forwarding);
  // The rules keep a reference to the pool: made once it is in its place.
  NetworkConfig bounds = config;
  bounds.max_connections_all = all_sandboxes_cap(config);
  auto rules = NftRules::open(networks->pool_, {config.dns_port, config.proxy_port},
                              std::move(opened), bounds);
  if (!rules) return rules.error();
  networks->rules_ = std::move(*rules);
  if (auto s = networks->rules_->install(); !s) return s.error();
  if (!networks->rules_->has_short_timeouts() && warnings)
    warnings->push_back(
        "this kernel has no conntrack timeout objects (nf_conntrack_timeout): a sandbox's "
        "closed connections stay in the host's connection tracking table 120 s, not 10");
  networks->remove_stale_tables();
  UniqueFd fd(::open(pool_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.valid()) (void)write_all(fd.get(), networks->pool_.cidr().text() + "\n", "write", "pool");
  return networks;
}

Networks::~Networks() {
  if (!rules_) return;
  sweep();  // veths of killed sandboxes the kernel has not deleted yet
  auto links = net_links::links_with_prefix(pool_.link_prefix());
  if (!links || !links->empty()) return;  // sandboxes outlive the daemon: keep their way out
  (void)rules_->remove();
  forwarding_.release();
}

Status Networks::attach(uint32_t slot, int net_ns_fd) {
  const std::string link = pool_.link_name(slot);
  Status s = net_links::create_veth(link, net_ns_fd);
  if (s) s = net_links::configure_host_end(link, pool_.gateway(slot));
  if (s) s = net_links::configure_inside(net_ns_fd, pool_.address(slot), pool_.gateway(slot));
  if (s) s = rules_->add_sandbox(slot);
  if (!s) {
    (void)rules_->remove_sandbox(slot);
    (void)net_links::delete_link(link);
  }
  return s;
}

Status Networks::adopt(uint32_t slot) {
  if (!pool_.hold(slot))
    return Error{"adopt sandbox network", EEXIST, "slot " + std::to_string(slot) + " is taken"};
  return rules_->add_sandbox(slot);
}

Status Networks::set_policy(uint32_t slot, const egress::Policy& policy) {
  if (auto s = rules_->set_policy(slot, policy); !s) return s;
  std::unique_lock lock(policies_mutex_);
  policies_[slot] = std::make_shared<const egress::Policy>(policy);
  return {};
}

std::shared_ptr<const egress::Policy> Networks::policy_at(uint32_t address) const {
  const uint32_t slot = pool_.slot_of_address(address);
  std::shared_lock lock(policies_mutex_);
  const auto it = policies_.find(slot);
  return it == policies_.end() ? nullptr : it->second;
}

void Networks::release(uint32_t slot) {
  if (slot == 0 || slot >= NetPool::kSlots) return;
  {
    std::unique_lock lock(policies_mutex_);
    policies_.erase(slot);
  }
  (void)rules_->remove_sandbox(slot);
  // The veth goes with the sandbox's network namespace, which the kernel
  // tears down in the background, many at once: deleting it here cost each
  // kill ~16 ms (the RTNL lock and an RCU grace period per link). One that
  // outlives its namespace is deleted by reserve() or sweep().
  pool_.give_back(slot);
}

uint32_t Networks::reserve() {
  const uint32_t slot = pool_.take();
  const std::string link = slot ? pool_.link_name(slot) : std::string();
  if (slot && ::if_nametoindex(link.c_str()) != 0) (void)net_links::delete_link(link);
  return slot;
}

// A daemon killed once its sandboxes were gone left its table: nothing holds
// that pool's lock nor has a link of it. Holding the lock while removing
// keeps a daemon that starts now from claiming the pool in between.
void Networks::remove_stale_tables() {
  auto pools = rules_->pools_with_tables();
  if (!pools) return;
  for (const egress::Cidr& cidr : *pools) {
    if (cidr == pool_.cidr()) continue;
    auto other = NetPool::claim_exact(cidr, kLockDir);
    if (!other) continue;
    auto links = net_links::links_with_prefix(other->link_prefix());
    if (links && links->empty()) (void)rules_->remove_pool_table(cidr);
  }
}

void Networks::sweep() {
  auto links = net_links::links_with_prefix(pool_.link_prefix());
  if (!links) return;
  for (const std::string& name : *links) {
    const uint32_t slot = pool_.slot_of_link(name);
    if (slot != 0 && pool_.hold(slot)) {  // nobody holds it: a dead sandbox's
      (void)net_links::delete_link(name);
      pool_.give_back(slot);
    }
  }
}

std::pair<uint64_t, uint64_t> Networks::counters(uint32_t address) const {
  const uint32_t slot = pool_.slot_of_address(address);
  if (slot == 0) return {0, 0};
  // Netlink, not /sys/class/net: sysfs shows the links of whichever
  // namespace it was mounted in, which need not be the daemon's.
  auto read = net_links::counters(pool_.link_name(slot));
  if (!read) return {0, 0};
  return {read->tx_bytes, read->rx_bytes};
}

}  // namespace abx::runtime
