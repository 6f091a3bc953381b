#include "daemon/egress_services.h"

#include <mutex>

namespace abx::daemon {

std::unique_ptr<EgressServices> EgressServices::start(const std::filesystem::path& /*data_dir*/,
                                                      std::vector<std::string>* warnings) {
  std::unique_ptr<EgressServices> services(new EgressServices());
  EgressServices* self = services.get();
  egress::DnsConfig dns;
  dns.policy_for = [self](uint32_t address) { return self->policy_for(address); };
  if (auto started = egress::DnsForwarder::start(std::move(dns), 0))
    services->dns_ = std::move(*started);
  else
    warnings->push_back("no DNS for sandboxes (" + started.error().message() +
                        "): names do not resolve inside them");
  return services;
}

EgressServices::~EgressServices() {
  use(nullptr);
  dns_.reset();  // joins its thread before the members it reads go
}

uint16_t EgressServices::dns_port() const { return dns_ ? dns_->port() : 0; }

uint16_t EgressServices::proxy_port() const { return 0; }

void EgressServices::use(runtime::Runtime* runtime) {
  std::unique_lock lock(mutex_);
  runtime_ = runtime;
}

void EgressServices::policy_changed(uint32_t /*address*/) {}

std::shared_ptr<const egress::Policy> EgressServices::policy_for(uint32_t address) const {
  std::shared_lock lock(mutex_);
  return runtime_ ? runtime_->egress_policy(address) : nullptr;
}

}  // namespace abx::daemon
