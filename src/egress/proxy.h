// The transparent egress proxy the daemon runs in the host network namespace.
// The runtime redirects a sandbox's TCP (ports 80 and 443, or every port when
// its policy names a SOCKS5 proxy) here whenever Policy::needs_proxy(). For
// each connection the proxy learns the destination the sandbox dialled
// (SO_ORIGINAL_DST), peeks at the first bytes for a TLS SNI or an HTTP Host,
// decides with the sandbox's policy, and relays to that address (or through
// the SOCKS5 proxy). Hosts with header rules get their requests rewritten; for
// TLS that means terminating it with a leaf signed by the per-daemon CA and
// re-encrypting to the real host with full verification. Nothing here knows
// the daemon or the runtime: the daemon passes lookups in ProxyConfig.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "egress/event_rate.h"
#include "egress/network_event.h"
#include "egress/policy.h"

namespace abx::egress {

struct ProxyConfig {
  // The policy of the sandbox a connection comes from, by its source address
  // (host byte order); nullptr: unknown, the connection is dropped. Called from
  // connection threads and from policy_changed().
  std::function<std::shared_ptr<const Policy>(uint32_t source_ip)> policy_for;
  // Told of each connection of a known sandbox when it ends (allowed, with
  // the rule and the bytes each way) or is refused (why), and of each request
  // through the intercepting proxy (hosts with header rules); null: no one.
  NetworkRecorder record;
  // At most this many of a sandbox's connection and request events a second
  // reach `record`, after a burst of `event_burst`; the others are counted
  // into the next one's held_back (egress/event_rate.h).
  double events_per_second = EventRate::kPerSecond, event_burst = EventRate::kBurst;
  // Addresses no connection may reach whatever the policy (the host, sandboxes,
  // private ranges): checked on the original destination and on every address
  // the proxy dials itself (a SOCKS proxy's). Null: none.
  std::function<bool(uint32_t ip)> always_denied;
  // The value of a daemon secret a rule header names ("abx-secret:NAME") for
  // a request to `host` (the name the TLS certificate or the dialled address
  // proved), in the header `header`; nullopt: unknown, not for that host or
  // not for that header, and the request is answered 502 (the placeholder
  // never leaves).
  std::function<std::optional<std::string>(uint32_t source_ip, const std::string& name,
                                           const std::string& host, const std::string& header)>
      secret;
  // Whether `name` has the address `ip` now; null: the host's resolver
  // (getaddrinfo). A name the sandbox sent only counts for an address it has;
  // one whose lookup takes longer than lookup_timeout has none.
  std::function<bool(const std::string& name, uint32_t ip)> resolves_to;
  // The per-daemon CA (ca.pem, and ca.key mode 0600): created on first start, reused after.
  std::filesystem::path ca_dir;
  // An extra CA file trusted for TLS to real hosts, besides the system store (tests).
  std::string upstream_ca_file;
  // The team a connection's sandbox belongs to, by its source address, and
  // the most connections that team may hold at once (0: max_connections / 2).
  // Null, or an empty key: every sandbox is a team of its own. When the table
  // is full, a team holding fewer connections than the team holding the most
  // takes that team's least recently active one (egress/slots.h).
  struct Team {
    std::string key;
    size_t max_connections = 0;
  };
  std::function<Team(uint32_t source_ip)> team_for;
  size_t max_connections = 1024, max_per_sandbox = 128;
  // Destination ports whose first bytes are read for an HTTP Host or a TLS SNI;
  // other ports are matched by address only (server-first protocols never wait).
  std::vector<uint16_t> peek_ports{80, 443};
  std::chrono::milliseconds peek_timeout{5000};        // for the first bytes (SNI, Host)
  std::chrono::milliseconds handshake_timeout{10000};  // connect + SOCKS + TLS, each side
  std::chrono::milliseconds lookup_timeout{5000};      // a name's addresses (egress/lookup.h)
  std::chrono::milliseconds idle_timeout{60000};       // no byte either way: closed
};

class EgressProxy {
 public:
  // Listens on 0.0.0.0:port (0: any free port) and serves in threads of its own.
  static Result<std::unique_ptr<EgressProxy>> start(ProxyConfig config, uint16_t port);
  ~EgressProxy();  // stops accepting, cuts every connection, joins every thread
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  uint16_t port() const;
  // The CA certificate (PEM) sandboxes must trust.
  std::string ca_pem() const;
  // The policy of `source_ip` changed: its open connections that the new policy
  // forbids (or routes differently: another SOCKS proxy, other header rules) are cut.
  void policy_changed(uint32_t source_ip);
  // Serves one accepted connection whose original destination is given (what
  // the listener reads with SO_ORIGINAL_DST): the test seam.
  void serve(UniqueFd client, sockaddr_in original_dst);

 private:
  struct Impl;
  explicit EgressProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace abx::egress
