#include "daemon/egress_registry.h"

#include <mutex>

namespace abx::daemon {

void EgressRegistry::set(uint32_t address, egress::Policy policy) {
  std::function<void(uint32_t)> listener;
  {
    std::unique_lock lock(mutex_);
    auto& slot = policies_[address];
    const bool replaced = slot != nullptr;
    slot = std::make_shared<const egress::Policy>(std::move(policy));
    if (replaced) listener = listener_;
  }
  if (listener) listener(address);
}

void EgressRegistry::erase(uint32_t address) {
  std::function<void(uint32_t)> listener;
  {
    std::unique_lock lock(mutex_);
    if (policies_.erase(address) == 0) return;
    listener = listener_;
  }
  if (listener) listener(address);  // its connections go with it
}

EgressRegistry::Policy EgressRegistry::lookup(uint32_t address) const {
  std::shared_lock lock(mutex_);
  const auto it = policies_.find(address);
  return it == policies_.end() ? nullptr : it->second;
}

void EgressRegistry::on_change(std::function<void(uint32_t)> listener) {
  std::unique_lock lock(mutex_);
  listener_ = std::move(listener);
}

}  // namespace abx::daemon
