#include "daemon/egress_services.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace abx::daemon {
namespace {

// What the proxy may never dial for a sandbox.
std::function<bool(uint32_t)> always_denied(const runtime::NetworkConfig& network) {
  std::vector<egress::Cidr> opened;
  for (const std::string& text : network.open_private)
    if (auto cidr = egress::parse_cidr(text)) opened.push_back(*cidr);
  return egress::never_dialed(std::move(opened));
}

std::string dotted(uint32_t ip) {
  in_addr a{htonl(ip)};
  char buffer[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buffer, sizeof buffer);
  return buffer;
}

// An event's fields as the flight record shows them: what it has, no empties.
nlohmann::json network_fields(const egress::NetworkEvent& event) {
  using Kind = egress::NetworkEvent::Kind;
  nlohmann::json fields = {{"allowed", event.allowed}};
  if (!event.host.empty()) fields["host"] = event.host;
  if (event.kind != Kind::kDns) fields["ip"] = dotted(event.ip), fields["port"] = event.port;
  if (!event.reason.empty()) fields[event.allowed ? "rule" : "reason"] = event.reason;
  if (event.kind == Kind::kDns && event.repeats > 0) fields["repeats"] = event.repeats;
  if (event.held_back > 0) fields["heldBack"] = event.held_back;  // over the rate, before it
  if (event.kind == Kind::kConnection && event.allowed) {
    fields["bytesOut"] = event.bytes_out;
    fields["bytesIn"] = event.bytes_in;
    fields["durationMs"] = event.duration_ms;
  }
  if (event.kind == Kind::kRequest) {
    fields["method"] = event.method;
    fields["path"] = event.path;
    if (!event.secrets.empty()) fields["secrets"] = event.secrets;  // names only
  }
  return fields;
}

}  // namespace

std::unique_ptr<EgressServices> EgressServices::start(const std::filesystem::path& data_dir,
                                                      const runtime::NetworkConfig& network,
                                                      std::vector<std::string>* warnings) {
  std::unique_ptr<EgressServices> services(new EgressServices());
  EgressServices* self = services.get();
  auto policy_for = [self](uint32_t address) { return self->policy_for(address); };
  auto record = [self](uint32_t address, const egress::NetworkEvent& event) {
    self->record(address, event);
  };
  egress::DnsConfig dns;
  dns.policy_for = policy_for;
  dns.record = record;
  if (auto started = egress::DnsForwarder::start(std::move(dns), 0))
    services->dns_ = std::move(*started);
  else
    warnings->push_back("no DNS for sandboxes (" + started.error().message() +
                        "): names do not resolve inside them");
  egress::ProxyConfig proxy;
  proxy.policy_for = policy_for;
  proxy.record = record;
  proxy.always_denied = always_denied(network);
  proxy.secret = [self](uint32_t address, const std::string& name, const std::string& host,
                        const std::string& header) {
    std::shared_lock lock(self->mutex_);
    return self->secrets_ ? self->secrets_(address, name, host, header) : std::nullopt;
  };
  proxy.team_for = [self](uint32_t address) {
    std::shared_lock lock(self->mutex_);
    return self->teams_ ? self->teams_(address) : egress::ProxyConfig::Team{};
  };
  if (network.proxy_max_connections) proxy.max_connections = network.proxy_max_connections;
  proxy.idle_timeout = std::chrono::seconds(network.proxy_idle_timeout_s);
  proxy.ca_dir = data_dir / "egress-ca";
  if (const char* extra = std::getenv("ABX_UPSTREAM_CA_FILE")) proxy.upstream_ca_file = extra;
  if (auto started = egress::EgressProxy::start(std::move(proxy), 0))
    services->proxy_ = std::move(*started);
  else
    warnings->push_back("no egress proxy (" + started.error().message() +
                        "): host names in allowOut/denyOut, header rules and egressProxy do not "
                        "work; sandboxes with them reach only the addresses their lists allow");
  return services;
}

EgressServices::~EgressServices() {
  use(nullptr);
  proxy_.reset();  // both join their threads before the members they read go
  dns_.reset();
}

uint16_t EgressServices::dns_port() const { return dns_ ? dns_->port() : 0; }

uint16_t EgressServices::proxy_port() const { return proxy_ ? proxy_->port() : 0; }

std::string EgressServices::ca_pem() const { return proxy_ ? proxy_->ca_pem() : std::string(); }

void EgressServices::use(runtime::Runtime* runtime) {
  std::unique_lock lock(mutex_);
  runtime_ = runtime;
  if (!runtime)
    secrets_ = nullptr, teams_ = nullptr, logs_ = nullptr;  // they ask the service, which goes too
}

void EgressServices::find_secrets(SecretLookup lookup) {
  std::unique_lock lock(mutex_);
  secrets_ = std::move(lookup);
}

void EgressServices::find_teams(TeamLookup lookup) {
  std::unique_lock lock(mutex_);
  teams_ = std::move(lookup);
}

void EgressServices::find_logs(LogLookup lookup) {
  std::unique_lock lock(mutex_);
  logs_ = std::move(lookup);
}

void EgressServices::record(uint32_t address, const egress::NetworkEvent& event) const {
  std::shared_ptr<SandboxLog> log;
  {
    std::shared_lock lock(mutex_);
    if (logs_) log = logs_(address);
  }
  if (log) log->event("network", egress::kind_name(event.kind), network_fields(event));
}

void EgressServices::policy_changed(uint32_t address) {
  if (proxy_) proxy_->policy_changed(address);
}

std::shared_ptr<const egress::Policy> EgressServices::policy_for(uint32_t address) const {
  std::shared_lock lock(mutex_);
  return runtime_ ? runtime_->egress_policy(address) : nullptr;
}

}  // namespace abx::daemon
