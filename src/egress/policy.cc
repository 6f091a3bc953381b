#include "egress/policy.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>

namespace abx::egress {
namespace {

uint32_t mask_of(uint8_t prefix) { return prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix); }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "Example.COM.:443" → "example.com". IPv6 literals are not names: unchanged.
std::string normal_host(std::string_view host) {
  if (host.empty() || host.front() == '[') return std::string(host);
  if (const auto colon = host.rfind(':'); colon != std::string_view::npos)
    host = host.substr(0, colon);
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  return lower(host);
}

bool any_host(const std::vector<std::string>& patterns, std::string_view host) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return host_matches(p, host); });
}

bool any_cidr(const std::vector<Cidr>& cidrs, uint32_t ip) {
  return std::any_of(cidrs.begin(), cidrs.end(), [&](const Cidr& c) { return c.contains(ip); });
}

}  // namespace

const std::vector<Cidr>& always_denied_ranges() {
  static const std::vector<Cidr> ranges = [] {
    std::vector<Cidr> out;
    // RFC 6890's ranges that are never a public host: this network, private,
    // CGNAT, loopback, link-local and metadata, IETF protocol assignments
    // (192.0.0.0/24), benchmarking (198.18.0.0/15, also where proxies put
    // their fake-IP DNS answers), multicast, reserved and broadcast.
    for (const char* text :
         {"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
          "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3"})
      out.push_back(*parse_cidr(text));
    return out;
  }();
  return ranges;
}

bool Cidr::contains(uint32_t ip) const { return (ip & mask_of(prefix)) == network; }

namespace {

bool is_host_address(uint32_t ip) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return true;  // cannot tell: deny
  bool found = false;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next)
    found = a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
            ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr) == ip;
  ::freeifaddrs(list);
  return found;
}

}  // namespace

std::function<bool(uint32_t)> never_dialed(std::vector<Cidr> opened, HostAddresses host) {
  return [opened = std::move(opened), host](uint32_t ip) {
    auto in = [ip](const Cidr& c) { return c.contains(ip); };
    const auto& ranges = always_denied_ranges();
    const bool is_opened = std::any_of(opened.begin(), opened.end(), in);
    if (std::any_of(ranges.begin(), ranges.end(), in) && !is_opened) return true;
    if (is_opened && host == HostAddresses::unless_opened) return false;
    return is_host_address(ip);
  };
}

std::string Cidr::text() const {
  in_addr a{htonl(network)};
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + '/' + std::to_string(prefix);
}

std::optional<Cidr> parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  const std::string address(text.substr(0, slash));
  in_addr a{};
  if (::inet_pton(AF_INET, address.c_str(), &a) != 1) return std::nullopt;
  Cidr cidr{ntohl(a.s_addr), 32};
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    unsigned prefix = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || prefix > 32)
      return std::nullopt;
    cidr.prefix = static_cast<uint8_t>(prefix);
  }
  if ((cidr.network & ~mask_of(cidr.prefix)) != 0) return std::nullopt;
  return cidr;
}

bool Policy::needs_proxy() const {
  return !allow_hosts.empty() || !deny_hosts.empty() || !rules.empty() || egress_proxy.has_value();
}

bool Policy::denies_all() const {
  return std::find(deny_cidrs.begin(), deny_cidrs.end(), kAllTraffic) != deny_cidrs.end();
}

bool forbidden_rule_header(std::string_view name) {
  const std::string name_lower = lower(name);
  static constexpr std::string_view kForbidden[] = {
      "host",    "connection", "content-length", "transfer-encoding",
      "upgrade", "te",         "trailer",        "keep-alive"};
  return name_lower.rfind("proxy-", 0) == 0 ||
         std::find(std::begin(kForbidden), std::end(kForbidden), name_lower) !=
             std::end(kForbidden);
}

bool host_matches(std::string_view pattern, std::string_view host) {
  const std::string name = normal_host(host);
  const std::string p = lower(pattern);
  if (name.empty() || p.empty()) return false;
  if (p.rfind("*.", 0) == 0) {
    const std::string_view suffix = std::string_view(p).substr(1);  // ".example.com"
    return name.size() > suffix.size() &&
           std::string_view(name).substr(name.size() - suffix.size()) == suffix;
  }
  return name == p;
}

bool allows(const Policy& policy, uint32_t ip, std::string_view host) {
  if (any_cidr(policy.allow_cidrs, ip)) return true;
  if (!host.empty() && any_host(policy.allow_hosts, host)) return true;
  if (any_cidr(policy.deny_cidrs, ip)) return false;
  if (!host.empty() && any_host(policy.deny_hosts, host)) return false;
  return true;
}

bool resolves(const Policy& policy, std::string_view name) {
  if (any_host(policy.allow_hosts, name)) return true;
  if (policy.denies_all()) return false;
  return !any_host(policy.deny_hosts, name);
}

namespace {

const Cidr* first_cidr(const std::vector<Cidr>& cidrs, uint32_t ip) {
  const auto it =
      std::find_if(cidrs.begin(), cidrs.end(), [&](const Cidr& c) { return c.contains(ip); });
  return it == cidrs.end() ? nullptr : &*it;
}

const std::string* first_host(const std::vector<std::string>& patterns, std::string_view host) {
  if (host.empty()) return nullptr;
  const auto it = std::find_if(patterns.begin(), patterns.end(),
                               [&](const std::string& p) { return host_matches(p, host); });
  return it == patterns.end() ? nullptr : &*it;
}

}  // namespace

// Follows allows() and resolves() step by step: the first entry that decides is named.
std::string deciding_rule(const Policy& policy, uint32_t ip, std::string_view host) {
  const bool dns = ip == 0;
  if (const Cidr* c = dns ? nullptr : first_cidr(policy.allow_cidrs, ip))
    return "allowOut " + c->text();
  if (const std::string* h = first_host(policy.allow_hosts, host)) return "allowOut " + *h;
  if (const Cidr* c =
          dns ? (policy.denies_all() ? &kAllTraffic : nullptr) : first_cidr(policy.deny_cidrs, ip))
    return "denyOut " + c->text();
  if (const std::string* h = first_host(policy.deny_hosts, host)) return "denyOut " + *h;
  return "no rule";
}

const HostRule* rule_for(const Policy& policy, std::string_view host) {
  const std::string name = normal_host(host);
  for (const HostRule& rule : policy.rules)
    if (lower(rule.host) == name) return &rule;
  for (const HostRule& rule : policy.rules)
    if (host_matches(rule.host, name)) return &rule;
  return nullptr;
}

bool valid_host_pattern(std::string_view host) {
  std::string_view name = host;
  if (name.rfind("*.", 0) == 0) name.remove_prefix(2);
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    if (++label > 63) return false;
  }
  return true;
}

}  // namespace abx::egress
