// A sandbox's egress policy in E2B's terms (allowOut, denyOut, rules,
// egressProxy, dnsServers) and the decisions made from it. Shared by the
// pieces that enforce it: the runtime's nftables rules (addresses), the
// egress proxy (HTTP Host / TLS SNI) and the DNS forwarder (names).
//
// E2B's precedence: an address or name that matches allowOut is allowed even
// if denyOut matches too; no allowOut means everything not denied is allowed.
// allow_internet_access=false is denyOut 0.0.0.0/0. The always-denied set
// (the host, other sandboxes, private and link-local ranges) is checked
// before any of this and cannot be opened by a policy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abx::egress {

// An IPv4 network; a bare address is a /32. Host byte order.
struct Cidr {
  uint32_t network = 0;
  uint8_t prefix = 32;
  bool contains(uint32_t ip) const;
  std::string text() const;  // "1.2.3.0/24"
  bool operator==(const Cidr&) const = default;
};
// "1.2.3.4" or "1.2.3.0/24" (host bits must be zero); nullopt otherwise.
std::optional<Cidr> parse_cidr(std::string_view text);
inline constexpr Cidr kAllTraffic{0, 0};

// A header the egress proxy adds or replaces on requests to a host. A value
// that ends in "abx-secret:NAME" ("Bearer abx-secret:NAME") refers to a
// daemon secret, put in by the proxy at send time; the sandbox never sees it.
struct Header {
  std::string name;
  std::string value;
  bool operator==(const Header&) const = default;
};
inline constexpr std::string_view kSecretPrefix = "abx-secret:";

// Headers no rule may set: Host (the proxy checked the request's own Host and
// SNI; a replaced one would send the rule's headers, secrets included, to
// another virtual host of the same address) and those that frame or route the
// message hop by hop (Connection, Content-Length, Transfer-Encoding, Upgrade,
// TE, Trailer, Keep-Alive, Proxy-*): a replaced one would desynchronise the
// proxy's view of the stream from the server's. Case-insensitive.
bool forbidden_rule_header(std::string_view name);

// network.rules: host (exact or "*.wildcard") → headers to set.
struct HostRule {
  std::string host;
  std::vector<Header> headers;
  bool operator==(const HostRule&) const = default;
};

// network.egressProxy: a SOCKS5 proxy the sandbox's TCP is tunnelled through.
struct SocksProxy {
  std::string host;  // name or IPv4 literal
  uint16_t port = 0;
  std::string username, password;  // RFC 1929; empty: no authentication
  bool tls = false;
  std::string tls_server_name;  // empty: host
  std::string tls_ca_pem;       // empty: the system trust store
  bool operator==(const SocksProxy&) const = default;
};

struct Policy {
  std::vector<Cidr> allow_cidrs, deny_cidrs;
  std::vector<std::string> allow_hosts, deny_hosts;  // lower case, "*.x.y" for wildcards
  std::vector<HostRule> rules;
  std::optional<SocksProxy> egress_proxy;
  // network.dnsServers; nullopt: E2B's default (8.8.8.8). Opened in the
  // firewall only when allow_hosts is not empty, as E2B does.
  std::optional<std::vector<uint32_t>> dns_servers;

  // Whether TCP to HTTP(S) ports must pass the egress proxy: names can only
  // be matched there, headers only set there, SOCKS only dialled there.
  bool needs_proxy() const;
  bool denies_all() const;  // deny_cidrs holds 0.0.0.0/0
  bool operator==(const Policy&) const = default;
};

// The ranges no policy opens: "this" network, private (RFC 1918), CGNAT,
// loopback, link-local (cloud metadata), multicast and reserved. The host's
// own addresses and the sandboxes' pool are denied besides (where they are
// known: the runtime's input chain, the proxy's host check).
const std::vector<Cidr>& always_denied_ranges();

// What the daemon never dials on another's behalf (a sandbox's proxied
// connection, a registry an API caller names): the always-denied ranges less
// those an admin opened, and the host's own addresses (asked at each call:
// DHCP and links change them) — for a sandbox even inside an opened range,
// for a registry (HostAddresses::unless_opened) not there: an admin who opens
// 127.0.0.0/8 for registries means the host's own. IPv4, host byte order.
enum class HostAddresses { denied, unless_opened };
std::function<bool(uint32_t)> never_dialed(std::vector<Cidr> opened,
                                           HostAddresses host = HostAddresses::denied);

// "*.example.com" matches "a.example.com" and "a.b.example.com", not
// "example.com"; other patterns match exactly. Case-insensitive; a trailing
// dot and a ":port" on `host` are ignored.
bool host_matches(std::string_view pattern, std::string_view host);

// A DNS name, or "*." and one: labels of letters, digits, '-' and '_' (the
// case is the caller's: patterns are kept lower case).
bool valid_host_pattern(std::string_view host);

// The verdict for a connection to `ip`, with `host` the name it asked for
// (HTTP Host, TLS SNI) or empty when unknown (then only CIDRs match).
bool allows(const Policy& policy, uint32_t ip, std::string_view host);

// Whether the DNS forwarder answers a query for `name`: not when a denied
// host matches it and no allowed host does, nor under deny-all unless an
// allowed host matches it.
bool resolves(const Policy& policy, std::string_view name);

// Which entry decided allows() (`ip` 0: resolves() for the name `host`), for
// the flight record: "allowOut 10.0.0.0/8", "denyOut *.evil.test", or
// "no rule" when nothing matched and the default (allowed) held.
std::string deciding_rule(const Policy& policy, uint32_t ip, std::string_view host);

// The rule whose host matches `host` (exact matches before wildcards), or null.
const HostRule* rule_for(const Policy& policy, std::string_view host);

}  // namespace abx::egress
