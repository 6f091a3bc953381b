// The daemon's half of sandbox networking: the DNS forwarder every
// sandbox's resolv.conf names and the egress proxy the runtime's nftables
// rules redirect to. Both listen before the runtime opens (its rules need
// their ports) and learn each source address's policy from the runtime.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "daemon/sandbox_log.h"
#include "egress/dns_forwarder.h"
#include "egress/proxy.h"
#include "runtime/runtime.h"

namespace abx::daemon {

class EgressServices {
 public:
  // What cannot start is a warning: sandboxes then resolve no names (DNS)
  // or get no names, header rules and SOCKS (proxy); never silently.
  static std::unique_ptr<EgressServices> start(const std::filesystem::path& data_dir,
                                               const runtime::NetworkConfig& network,
                                               std::vector<std::string>* warnings);
  ~EgressServices();

  uint16_t dns_port() const;
  uint16_t proxy_port() const;

  // Policies come from `runtime` from now on; nullptr (before the runtime
  // goes) makes every source unknown.
  void use(runtime::Runtime* runtime);
  // The sandbox at `address` has a new policy, or is gone.
  void policy_changed(uint32_t address);
  // How the proxy finds a secret a header names, for the sandbox at an
  // address sending to `host` in the header `header`.
  using SecretLookup =
      std::function<std::optional<std::string>(uint32_t address, const std::string& name,
                                               const std::string& host, const std::string& header)>;
  void find_secrets(SecretLookup lookup);
  // The team of a sandbox's address and its share of the proxy's connections
  // (the proxy's slot accounting); null: every sandbox is a team of its own.
  using TeamLookup = std::function<egress::ProxyConfig::Team(uint32_t address)>;
  void find_teams(TeamLookup lookup);
  // The flight record of the sandbox at an address, where its network events
  // go (type "network": dns, connection, request); null: recorded nowhere.
  using LogLookup = std::function<std::shared_ptr<SandboxLog>(uint32_t address)>;
  void find_logs(LogLookup lookup);
  // The CA sandboxes trust for the hosts whose HTTPS the proxy intercepts; empty: none.
  std::string ca_pem() const;

 private:
  EgressServices() = default;
  std::shared_ptr<const egress::Policy> policy_for(uint32_t address) const;
  void record(uint32_t address, const egress::NetworkEvent& event) const;

  mutable std::shared_mutex mutex_;
  runtime::Runtime* runtime_ = nullptr;
  SecretLookup secrets_;
  TeamLookup teams_;
  LogLookup logs_;
  std::unique_ptr<egress::DnsForwarder> dns_;
  std::unique_ptr<egress::EgressProxy> proxy_;
};

}  // namespace abx::daemon
