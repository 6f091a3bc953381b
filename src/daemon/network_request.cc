#include "daemon/network_request.h"

#include <algorithm>
#include <cctype>

#include "common/json_text.h"

namespace abx::daemon {
namespace {

using nlohmann::json;

constexpr size_t kMaxEntries = 512;       // per list, and rules
constexpr size_t kMaxDnsServers = 10;     // E2B's limit
constexpr size_t kMaxHeaderBytes = 8192;  // one header value
// Each request on a host with rules carries them: bounded, so that many tiny
// pipelined requests cannot multiply them into the daemon's memory.
constexpr size_t kMaxRuleHeaders = 32, kMaxRuleBytes = 16384;  // per host
// What list and detail show for a literal rule header value or SOCKS username.
constexpr const char* kHiddenValue = "[hidden]";
constexpr const char* kEgressFields[] = {"allowOut", "denyOut", "rules", "egressProxy",
                                         "dnsServers"};

Error bad(const std::string& field, const std::string& what) {
  return Error::with_message(field + ": " + what, kErrBadInput);
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Result<std::vector<std::string>> string_list(const json& doc, const std::string& field,
                                             size_t max) {
  std::vector<std::string> out;
  const auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return out;
  if (!it->is_array()) return bad("network." + field, "must be a list of strings");
  if (it->size() > max)
    return bad("network." + field, "at most " + std::to_string(max) + " entries");
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      return bad("network." + field + "[" + std::to_string(i) + "]", "must be a string");
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

// allowOut/denyOut entries: an IPv4 address or CIDR, or a host name (E2B
// takes names in allowOut only; we take them in both).
Status add_destinations(const std::vector<std::string>& entries, const std::string& field,
                        std::vector<egress::Cidr>* cidrs, std::vector<std::string>* hosts,
                        json* stored) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "network." + field + "[" + std::to_string(i) + "]";
    const std::string& entry = entries[i];
    if (auto cidr = egress::parse_cidr(entry)) {
      cidrs->push_back(*cidr);
    } else if (entry.find(':') != std::string::npos) {
      return bad(where, "'" + entry + "': sandboxes have IPv4 only; give an IPv4 address or CIDR");
    } else if (entry.find('/') != std::string::npos ||
               entry.find_first_not_of("0123456789.") == std::string::npos) {
      return bad(where,
                 "'" + entry + "' is not a valid IPv4 address or CIDR (e.g. \"10.0.0.0/8\")");
    } else if (const std::string host = lower(entry); egress::valid_host_pattern(host)) {
      hosts->push_back(host);
    } else {
      return bad(where, "'" + entry +
                            "' is not an IPv4 address, a CIDR or a host name (e.g. \"1.1.1.1\", "
                            "\"8.8.8.0/24\", \"api.example.com\", \"*.example.com\")");
    }
    stored->push_back(egress::parse_cidr(entry) ? entry : lower(entry));
  }
  return {};
}

bool valid_header_name(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

Result<std::vector<egress::Header>> parse_transform(const json& rule, const std::string& where) {
  std::vector<egress::Header> headers;
  if (!rule.is_object())
    return bad(where, "must be an object like {\"transform\": {\"headers\": {...}}}");
  const auto transform = rule.find("transform");
  if (transform == rule.end() || transform->is_null()) return headers;
  if (!transform->is_object()) return bad(where + ".transform", "must be an object");
  const auto map = transform->find("headers");
  if (map == transform->end() || map->is_null()) return headers;
  if (!map->is_object()) return bad(where + ".transform.headers", "must be an object of strings");
  for (const auto& [name, value] : map->items()) {
    const std::string at = where + ".transform.headers." + name;
    if (!valid_header_name(name)) return bad(at, "is not a valid HTTP header name");
    if (!value.is_string()) return bad(at, "must be a string");
    const std::string text = value.get<std::string>();
    if (text.size() > kMaxHeaderBytes || text.find_first_of("\r\n") != std::string::npos)
      return bad(at, "must be one line of at most 8192 bytes");
    headers.push_back({name, text});
  }
  return headers;
}

Status parse_rules(const json& doc, egress::Policy* policy, json* stored) {
  const auto it = doc.find("rules");
  if (it == doc.end() || it->is_null()) return {};
  if (!it->is_object()) return bad("network.rules", "must be an object of host → list of rules");
  if (it->size() > kMaxEntries) return bad("network.rules", "at most 512 hosts");
  json out = json::object();
  for (const auto& [raw_host, rules] : it->items()) {
    const std::string host = lower(raw_host);
    const std::string where = "network.rules." + raw_host;
    if (!egress::valid_host_pattern(host) && !egress::parse_cidr(host))
      return bad(where,
                 "the key must be a host name (e.g. \"api.example.com\", \"*.example.com\")");
    if (!rules.is_array()) return bad(where, "must be a list of rules");
    egress::HostRule rule{host, {}};
    size_t bytes = 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      auto headers = parse_transform(rules[i], where + "[" + std::to_string(i) + "]");
      if (!headers) return headers.error();
      for (auto& h : *headers) {
        bytes += h.name.size() + h.value.size();
        rule.headers.push_back(std::move(h));
      }
    }
    if (rule.headers.size() > kMaxRuleHeaders || bytes > kMaxRuleBytes)
      return bad(where, "at most 32 headers and 16384 bytes of them per host");
    policy->rules.push_back(std::move(rule));
    out[host] = rules;
  }
  (*stored)["rules"] = std::move(out);
  return {};
}

Status parse_egress_proxy(const json& doc, egress::Policy* policy, json* stored) {
  const auto it = doc.find("egressProxy");
  if (it == doc.end() || it->is_null()) return {};
  const std::string where = "network.egressProxy";
  if (!it->is_object()) return bad(where, "must be an object like {\"address\": \"host:1080\"}");
  egress::SocksProxy proxy;
  const std::string address = it->value("address", json()).is_string()
                                  ? it->at("address").get<std::string>()
                                  : std::string();
  const auto colon = address.rfind(':');
  const std::string port_text = colon == std::string::npos ? "" : address.substr(colon + 1);
  const bool digits = !port_text.empty() && port_text.size() <= 5 &&
                      port_text.find_first_not_of("0123456789") == std::string::npos;
  const long port = digits ? std::stol(port_text) : 0;
  proxy.host = colon == std::string::npos ? "" : lower(address.substr(0, colon));
  if (port < 1 || port > 65535 ||
      (!egress::valid_host_pattern(proxy.host) && !egress::parse_cidr(proxy.host)) ||
      proxy.host.rfind("*.", 0) == 0)
    return bad(where + ".address", "must be host:port, e.g. \"proxy.example.com:1080\"");
  proxy.port = static_cast<uint16_t>(port);
  for (auto [field, target] :
       {std::pair{"username", &proxy.username}, std::pair{"password", &proxy.password}}) {
    const auto v = it->find(field);
    if (v == it->end() || v->is_null()) continue;
    if (!v->is_string() || v->get<std::string>().size() > 255)
      return bad(where + "." + field, "must be a string of at most 255 bytes");
    *target = v->get<std::string>();
  }
  if (!proxy.password.empty() && proxy.username.empty())
    return bad(where + ".password", "needs a username");
  if (const auto tls = it->find("tls"); tls != it->end() && !tls->is_null()) {
    if (!tls->is_object()) return bad(where + ".tls", "must be an object");
    proxy.tls = tls->value("enabled", true) == true;
    if (tls->contains("serverName") && tls->at("serverName").is_string())
      proxy.tls_server_name = tls->at("serverName").get<std::string>();
    if (tls->contains("caCert") && tls->at("caCert").is_string())
      proxy.tls_ca_pem = tls->at("caCert").get<std::string>();
    if (proxy.tls_server_name.size() > 253 || proxy.tls_ca_pem.size() > 8192)
      return bad(where + ".tls", "serverName is at most 253 bytes, caCert at most 8192");
  }
  policy->egress_proxy = std::move(proxy);
  (*stored)["egressProxy"] = *it;
  return {};
}

Status parse_dns_servers(const json& doc, egress::Policy* policy, json* stored) {
  if (!doc.contains("dnsServers") || doc.at("dnsServers").is_null()) return {};
  auto servers = string_list(doc, "dnsServers", kMaxDnsServers);
  if (!servers) return servers.error();
  std::vector<uint32_t> ips;
  for (size_t i = 0; i < servers->size(); ++i) {
    auto cidr = egress::parse_cidr((*servers)[i]);
    if (!cidr || cidr->prefix != 32 || (*servers)[i].find('/') != std::string::npos)
      return bad("network.dnsServers[" + std::to_string(i) + "]", "must be an IPv4 address");
    ips.push_back(cidr->network);
  }
  policy->dns_servers = std::move(ips);
  (*stored)["dnsServers"] = *servers;
  return {};
}

Status parse_egress(const json& doc, NetworkSettings* out) {
  for (auto [field, cidrs, hosts] :
       {std::tuple{"allowOut", &out->policy.allow_cidrs, &out->policy.allow_hosts},
        std::tuple{"denyOut", &out->policy.deny_cidrs, &out->policy.deny_hosts}}) {
    auto entries = string_list(doc, field, kMaxEntries);
    if (!entries) return entries.error();
    if (!doc.contains(field) || doc.at(field).is_null()) continue;
    json stored = json::array();
    if (auto s = add_destinations(*entries, field, cidrs, hosts, &stored); !s) return s;
    out->stored[field] = std::move(stored);
  }
  if (auto s = parse_rules(doc, &out->policy, &out->stored); !s) return s;
  if (auto s = parse_egress_proxy(doc, &out->policy, &out->stored); !s) return s;
  return parse_dns_servers(doc, &out->policy, &out->stored);
}

// A Host header value: visible ASCII, no spaces, a name's length.
bool is_host_header(const std::string& text) {
  return !text.empty() && text.size() <= 253 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

Status parse_ingress(const json& doc, json* stored) {
  if (const auto v = doc.find("allowPublicTraffic"); v != doc.end() && !v->is_null()) {
    if (!v->is_boolean()) return bad("network.allowPublicTraffic", "must be true or false");
    (*stored)["allowPublicTraffic"] = *v;
  }
  if (const auto v = doc.find("maskRequestHost"); v != doc.end() && !v->is_null()) {
    if (!v->is_string() || !is_host_header(v->get<std::string>()))
      return bad("network.maskRequestHost", "must be a host such as \"${PORT}-app.example.com\"");
    (*stored)["maskRequestHost"] = *v;
  }
  if (const auto v = doc.find("httpsPorts"); v != doc.end() && !v->is_null()) {
    if (!v->is_array() || v->size() > 64)
      return bad("network.httpsPorts", "must be a list of ports");
    for (const auto& port : *v)
      if (!port.is_number_integer() || port.get<int64_t>() < 1 || port.get<int64_t>() > 65535 ||
          port.get<int64_t>() == 49983)
        return bad("network.httpsPorts", "ports are 1-65535, not envd's 49983");
    (*stored)["httpsPorts"] = *v;
  }
  return {};
}

// A rule header's value as shown: a secret's reference, never a literal (a
// token written into a rule is as secret as one stored with `abx secrets`).
json shown_header_value(const json& value) {
  if (!value.is_string()) return value;
  const std::string text = value.get<std::string>();
  const auto at = text.find(egress::kSecretPrefix);
  return at == std::string::npos ? std::string(kHiddenValue) : text.substr(at);
}

json shown_rules(const json& rules) {
  json out = rules;
  for (json& list : out) {
    if (!list.is_array()) continue;
    for (json& rule : list) {
      const auto transform = rule.is_object() ? rule.find("transform") : rule.end();
      if (transform == rule.end() || !transform->is_object()) continue;
      const auto headers = transform->find("headers");
      if (headers == transform->end() || !headers->is_object()) continue;
      for (json& value : *headers) value = shown_header_value(value);
    }
  }
  return out;
}

}  // namespace

Status check_new_rules(const egress::Policy& policy) {
  for (const egress::HostRule& rule : policy.rules)
    for (const egress::Header& header : rule.headers)
      if (egress::forbidden_rule_header(header.name))
        return bad("network.rules." + rule.host + ".transform.headers." + header.name,
                   "a rule may not set the header " + header.name +
                       " (Host and the hop-by-hop and framing headers are the proxy's)");
  return {};
}

egress::Policy NetworkSettings::effective() const {
  egress::Policy out = policy;
  if (!allow_internet_access && !out.denies_all()) out.deny_cidrs.push_back(egress::kAllTraffic);
  return out;
}

json NetworkSettings::shown() const {
  json out = stored;
  if (out.contains("rules") && out["rules"].is_object()) out["rules"] = shown_rules(out["rules"]);
  if (out.contains("egressProxy") && out["egressProxy"].is_object()) {
    out["egressProxy"].erase("password");
    if (out["egressProxy"].contains("username")) out["egressProxy"]["username"] = kHiddenValue;
    if (out["egressProxy"].contains("tls") && out["egressProxy"]["tls"].is_object())
      out["egressProxy"]["tls"].erase("caCert");
  }
  return out;
}

Result<NetworkSettings> parse_network(const json& network, bool allow_internet_access) {
  NetworkSettings out;
  out.allow_internet_access = allow_internet_access;
  if (network.is_null()) return out;
  if (!network.is_object()) return bad("network", "must be an object");
  if (auto s = parse_egress(network, &out); !s) return s.error();
  if (auto s = parse_ingress(network, &out.stored); !s) return s.error();
  return out;
}

Result<NetworkSettings> parse_network_update(const std::string& body,
                                             const NetworkSettings& current) {
  auto doc = json_text::parse_object(body);
  if (!doc) return doc.error();
  NetworkSettings out;
  out.stored = current.stored;
  for (const char* field : kEgressFields) out.stored.erase(field);
  out.allow_internet_access = true;
  if (const auto v = doc->find("allow_internet_access"); v != doc->end() && !v->is_null()) {
    if (!v->is_boolean()) return bad("allow_internet_access", "must be true or false");
    out.allow_internet_access = v->get<bool>();
  }
  if (auto s = parse_egress(*doc, &out); !s) return s.error();
  if (auto s = check_new_rules(out.policy); !s) return s.error();
  return out;
}

}  // namespace abx::daemon
