// Name lookups with a deadline. getaddrinfo takes none from its caller (the
// resolver's own is resolv.conf's timeout × attempts × servers, an NSS
// module's anything), and a proxy thread that waits on it holds a sandbox's
// connection and a slot of the proxy's table. So a lookup runs on a thread of
// its own and its caller waits at most the timeout: a late lookup is given up
// (its thread ends when getaddrinfo does). At most kMaxLookups run at once,
// late ones included; beyond, a lookup fails at once rather than pile up
// threads behind a resolver that never answers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/error.h"

namespace abx::egress {

inline constexpr size_t kMaxLookups = 64;

namespace lookup_slots {
bool take();  // false: kMaxLookups are running
void give();
}  // namespace lookup_slots

// What `work` returns, or nullopt when it takes longer than `timeout` (or
// kMaxLookups are running). `work` must own all it uses: it may outlive the call.
template <class T>
std::optional<T> within(std::chrono::milliseconds timeout, std::function<T()> work) {
  struct Outcome {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<T> value;
  };
  if (!lookup_slots::take()) return std::nullopt;
  auto outcome = std::make_shared<Outcome>();
  try {
    std::thread([outcome, work = std::move(work)] {
      T value = work();
      {
        std::lock_guard lock(outcome->mutex);
        outcome->value = std::move(value);
      }
      outcome->done.notify_all();
      lookup_slots::give();
    }).detach();
  } catch (const std::system_error&) {
    lookup_slots::give();
    return std::nullopt;
  }
  std::unique_lock lock(outcome->mutex);
  outcome->done.wait_for(lock, timeout, [&] { return outcome->value.has_value(); });
  return std::move(outcome->value);
}

// The IPv4 addresses of `name` (host byte order), a literal or a name,
// looked up with getaddrinfo within `timeout`.
Result<std::vector<uint32_t>> ipv4_addresses(const std::string& name,
                                             std::chrono::milliseconds timeout);

}  // namespace abx::egress
