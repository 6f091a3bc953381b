// Sandbox networks as a whole: the address pool, the veth of each sandbox
// and the nftables table that judges what they send. A sandbox holds a slot
// (its /30) from before its init starts (its resolv.conf names the gateway)
// until destroy; the table outlives a daemon that leaves sandboxes running
// and is replaced, then refilled by adopt, by the next one.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "egress/policy.h"
#include "runtime/forwarding.h"
#include "runtime/net_pool.h"
#include "runtime/nft_rules.h"
#include "runtime/runtime.h"

namespace abx::runtime {

class Networks {
 public:
  // Claims a pool, turns on IPv4 forwarding and installs the table.
  static Result<std::unique_ptr<Networks>> open(const NetworkConfig& config,
                                                const fs::path& state_dir,
                                                std::vector<std::string>* warnings);
  ~Networks();  // removes the table when no sandbox of this pool is left

  // A slot for a sandbox about to start; 0 when the pool is exhausted. A
  // veth left of the slot's last sandbox goes first.
  uint32_t reserve();
  // Its veth, addresses and a refuse-all chain; on failure nothing is left.
  Status attach(uint32_t slot, int net_ns_fd);
  // An adopted sandbox's slot and chain (its veth lives on in its namespace).
  Status adopt(uint32_t slot);
  Status set_policy(uint32_t slot, const egress::Policy& policy);
  // Chain and slot go (the veth with the sandbox's namespace); idempotent.
  void release(uint32_t slot);
  // Deletes veths of this pool whose slot no sandbox holds.
  void sweep();

  // What the sandbox at `address` received and sent, from its veth's host
  // end (whose receive is the sandbox's send); zeros when it has none.
  std::pair<uint64_t, uint64_t> counters(uint32_t address) const;

  const NetPool& pool() const { return pool_; }
  // The policy set for the sandbox at `address`; null: none (or not ours).
  std::shared_ptr<const egress::Policy> policy_at(uint32_t address) const;

 private:
  explicit Networks(NetPool pool);
  void remove_stale_tables();

  NetPool pool_;
  ForwardingHold forwarding_;
  std::unique_ptr<NftRules> rules_;
  mutable std::shared_mutex policies_mutex_;
  std::map<uint32_t, std::shared_ptr<const egress::Policy>> policies_;  // by slot
};

}  // namespace abx::runtime
