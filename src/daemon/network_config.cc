#include "daemon/network_config.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "common/fd_io.h"
#include "egress/policy.h"

namespace abx::daemon {

using nlohmann::json;

namespace {

using Field = uint32_t runtime::FlowBound::*;

Field flow_field(const std::string& key) {
  if (key == "atOnce") return &runtime::FlowBound::at_once;
  if (key == "perSecond") return &runtime::FlowBound::per_second;
  if (key == "burst") return &runtime::FlowBound::burst;
  return nullptr;
}

// network.dnsFlows and network.proxyFlows: {"atOnce", "perSecond", "burst"},
// each optional, each from 1 to 1000000.
Result<runtime::NetworkConfig> flow_bounds(const json& net, runtime::NetworkConfig config,
                                           const std::function<Error(const std::string&)>& bad) {
  for (const auto& [key, bound] : {std::pair{"dnsFlows", &runtime::NetworkConfig::dns_flows},
                                   std::pair{"proxyFlows", &runtime::NetworkConfig::proxy_flows}}) {
    const std::string name = key;
    if (!net.contains(name)) continue;
    const json& given = net[name];
    if (!given.is_object())
      return bad(name +
                 " must be an object such as {\"atOnce\": 256, \"perSecond\": 20, "
                 "\"burst\": 100}");
    for (const auto& [field, value] : given.items()) {
      const Field member = flow_field(field);
      if (!member) return bad(name + "." + field + " is not a key; use atOnce, perSecond, burst");
      if (!value.is_number_unsigned() || value.get<uint64_t>() < 1 ||
          value.get<uint64_t>() > 1000000)
        return bad(name + "." + field + " must be a number from 1 to 1000000");
      (config.*bound).*member = value.get<uint32_t>();
    }
  }
  return config;
}

}  // namespace

Result<runtime::NetworkConfig> load_network_config(const std::filesystem::path& file) {
  runtime::NetworkConfig config;
  auto text = read_file(file);
  if (!text)
    return text.error().errnum == ENOENT ? Result<runtime::NetworkConfig>(config) : text.error();
  const json doc = json::parse(*text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return Error::with_message("config " + file.string() + ": network." + why, kErrBadInput);
  };
  if (!doc.is_object() || !doc.contains("network")) return config;
  const json& net = doc["network"];
  if (!net.is_object()) return bad("{}: must be an object");
  if (net.contains("enabled")) {
    if (!net["enabled"].is_boolean()) return bad("enabled must be true or false");
    config.enabled = net["enabled"].get<bool>();
  }
  if (net.contains("pool")) {
    if (!net["pool"].is_string()) return bad("pool must be a /16 such as \"10.200.0.0/16\"");
    config.pool = net["pool"].get<std::string>();
  }
  if (net.contains("openPrivate")) {
    if (!net["openPrivate"].is_array()) return bad("openPrivate must be a list of CIDRs");
    for (const json& cidr : net["openPrivate"]) {
      if (!cidr.is_string() || !egress::parse_cidr(cidr.get<std::string>()))
        return bad("openPrivate: " + cidr.dump() + " is not an IPv4 CIDR such as \"10.1.2.0/24\"");
      config.open_private.push_back(cidr.get<std::string>());
    }
  }
  if (net.contains("maxConnections")) {
    const json& max = net["maxConnections"];
    if (!max.is_number_unsigned() || max.get<uint64_t>() < 1 || max.get<uint64_t>() > 1000000)
      return bad("maxConnections must be a number of connections per sandbox, 1 to 1000000");
    config.max_connections = max.get<uint32_t>();
  }
  for (const auto& [key, field, most] :
       {std::tuple{"proxyMaxConnections", &runtime::NetworkConfig::proxy_max_connections, 1000000},
        std::tuple{"maxConnectionsAllSandboxes", &runtime::NetworkConfig::max_connections_all,
                   100000000},
        std::tuple{"proxyIdleTimeoutSec", &runtime::NetworkConfig::proxy_idle_timeout_s, 86400}}) {
    const std::string name = key;  // json's contains() takes no const char* const&
    if (!net.contains(name)) continue;
    const json& value = net[name];
    if (!value.is_number_unsigned() || value.get<uint64_t>() < 1 ||
        value.get<uint64_t>() > uint64_t(most))
      return bad(name + " must be a number from 1 to " + std::to_string(most));
    config.*field = value.get<uint32_t>();
  }
  return flow_bounds(net, config, bad);
}

Result<std::vector<egress::Cidr>> load_registry_open_private(const std::filesystem::path& file) {
  std::vector<egress::Cidr> opened;
  auto text = read_file(file);
  if (!text)
    return text.error().errnum == ENOENT ? Result<std::vector<egress::Cidr>>(opened) : text.error();
  const json doc = json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("registries")) return opened;
  const json& registries = doc["registries"];
  const auto bad = Error::with_message(
      "config " + file.string() +
          ": registries.openPrivate must be a list of IPv4 CIDRs such as \"10.1.2.0/24\"",
      kErrBadInput);
  if (!registries.is_object()) return bad;
  if (!registries.contains("openPrivate")) return opened;
  if (!registries["openPrivate"].is_array()) return bad;
  for (const json& cidr : registries["openPrivate"]) {
    auto parsed = cidr.is_string() ? egress::parse_cidr(cidr.get<std::string>()) : std::nullopt;
    if (!parsed) return bad;
    opened.push_back(*parsed);
  }
  return opened;
}

}  // namespace abx::daemon
