// Which sandbox, and so which egress policy, is behind a source address:
// what the DNS forwarder and the egress proxy ask of every packet or
// connection that reaches them from a sandbox's network.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>

#include "egress/policy.h"

namespace abx::daemon {

class EgressRegistry {
 public:
  using Policy = std::shared_ptr<const egress::Policy>;

  void set(uint32_t address, egress::Policy policy);
  void erase(uint32_t address);
  Policy lookup(uint32_t address) const;  // null: no sandbox there

  // Told after a policy replaced another (the proxy cuts what it forbids now).
  void on_change(std::function<void(uint32_t address)> listener);

 private:
  mutable std::shared_mutex mutex_;
  std::map<uint32_t, Policy> policies_;
  std::function<void(uint32_t)> listener_;
};

}  // namespace abx::daemon
