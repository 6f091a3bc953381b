// The nftables rules of sandbox networks, one table per daemon (named after
// its address pool), run through libnftables: each call is one transaction.
//
// Every packet a sandbox sends is judged, not only a connection's first:
// that is what lets a policy update cut connections it now forbids (their
// next packet meets a TCP reset). Judged in order: IPv6 never passes; other
// sandboxes, the pool, and the always-denied ranges are refused (an admin
// may open named private ranges, which the policy then judges); the
// sandbox's own chains check its source address (a sandbox root may set any
// address on eth0), its connection cap and its rate of new flows, then apply allowOut before
// denyOut (the policy is rules, rewritten whole on a change). Packets to the host
// itself (any of its addresses) meet the input chain: only DNS and the
// egress proxy, reached through the redirects, pass, within the same
// connection cap and bounds of their own (FlowBound). A policy under which
// no name resolves gets no DNS redirect at all.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "egress/policy.h"
#include "runtime/net_pool.h"
#include "runtime/runtime.h"

struct nft_ctx;

namespace abx::runtime {

struct NftPorts {
  uint16_t dns = 0;    // the daemon's DNS forwarder (UDP and TCP), 0: none
  uint16_t proxy = 0;  // the daemon's egress proxy, 0: none
};

// Seconds a sandbox's closed TCP connections (TIME_WAIT, CLOSE) and its UDP
// exchanges (a DNS query and its answer) stay tracked; the kernel's defaults
// are 120 and 30.
inline constexpr uint32_t kClosedSeconds = 10;
// New flows of any kind a sandbox may open per second (in bursts of): with
// kClosedSeconds, what its closed flows hold in the table.
inline constexpr FlowBound kAllFlows{0, 500, 1000};

class NftRules {
 public:
  // `bounds`: a sandbox's flows in the host's connection tracking table
  // (NetworkConfig's max_connections, dns_flows and proxy_flows), and of all
  // sandboxes together (max_connections_all, here as is: 0 is none).
  static Result<std::unique_ptr<NftRules>> open(const NetPool& pool, NftPorts ports,
                                                std::vector<egress::Cidr> opened,
                                                const NetworkConfig& bounds);

  // Replaces this pool's table (a dead daemon's rules) with an empty base.
  Status install();
  // Whether install() could shorten how long sandbox flows stay tracked
  // (kClosedSeconds): not on a kernel without nf_conntrack_timeout.
  bool has_short_timeouts() const { return short_timeouts_; }
  // Removes the table.
  Status remove();

  // A sandbox's chains, refusing all egress until set_policy.
  Status add_sandbox(uint32_t slot);
  Status set_policy(uint32_t slot, const egress::Policy& policy);
  Status remove_sandbox(uint32_t slot);

  const std::string& table() const { return table_; }

  // The pools (as /16s) of every abx table in this namespace, ours included.
  Result<std::vector<egress::Cidr>> pools_with_tables();
  // Removes another pool's table (its daemon is gone: the caller holds its lock).
  Status remove_pool_table(const egress::Cidr& pool);

 private:
  NftRules(const NetPool& pool, NftPorts ports, std::vector<egress::Cidr> opened,
           const NetworkConfig& bounds);
  Status run(const std::string& commands, const std::string& step);
  std::string base_ruleset(bool with_short_timeouts) const;
  std::string short_timeouts() const;
  // The rules of host_N, the bounds of a sandbox's flows to the daemon.
  std::string host_rules(uint32_t slot) const;
  // Fills a sandbox's sets and chains (they exist) for `policy`.
  std::string policy_commands(uint32_t slot, const egress::Policy& policy) const;

  const NetPool& pool_;
  NftPorts ports_;
  std::vector<egress::Cidr> opened_;
  uint32_t max_connections_;
  FlowBound dns_flows_, proxy_flows_;
  uint32_t max_connections_all_;  // 0: no count over all sandboxes
  bool short_timeouts_ = true;
  std::string table_;  // "inet abx_0ac8", see table_of
  static std::string table_of(const egress::Cidr& pool);
  std::mutex mutex_;  // one transaction at a time, on the one context
  struct CtxFree {
    void operator()(nft_ctx* ctx) const;
  };
  std::unique_ptr<nft_ctx, CtxFree> ctx_;
};

}  // namespace abx::runtime
