// Name lookups with a deadline. getaddrinfo takes none from its caller (the
// resolver's own is resolv.conf's timeout × attempts × servers, an NSS
// module's anything), and a proxy thread that waits on it holds a sandbox's
// connection and a slot of the proxy's table. So a lookup runs on a thread of
// its own and its caller waits at most the timeout: a late lookup is given up
// (its thread ends when getaddrinfo does). Each pool of lookups (the egress
// proxy's, the registry check's) runs at most its own number at once, late
// ones included; beyond, a lookup fails at once, saying so, rather than pile
// up threads behind a resolver that never answers; and a sandbox that keeps
// the proxy's pool busy never holds up a template build's registry check.
#pragma once

#include <atomic>
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

// A bound on lookups running at once. Its objects live as long as the
// process: a late lookup's thread gives its slot back whenever it ends.
class LookupSlots {
 public:
  explicit LookupSlots(size_t most) : most_(most) {}
  bool take();  // false: `most` are running
  void give() { running_.fetch_sub(1); }
  size_t most() const { return most_; }

 private:
  const size_t most_;
  std::atomic<size_t> running_{0};
};
LookupSlots& proxy_lookups();     // the egress proxy's and its dials': kMaxLookups
LookupSlots& registry_lookups();  // the registry check's (registry.h): 8

// What `work` returns; ETIMEDOUT when it takes longer than `timeout`, EAGAIN
// when `slots` are all taken. `work` must own all it uses: it may outlive the call.
template <class T>
Result<T> within(std::chrono::milliseconds timeout, std::function<T()> work,
                 LookupSlots& slots = proxy_lookups()) {
  struct Outcome {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<T> value;
  };
  const Error busy = Error::with_message(
      std::to_string(slots.most()) + " name lookups are running already; try again", EAGAIN);
  if (!slots.take()) return busy;
  auto outcome = std::make_shared<Outcome>();
  try {
    std::thread([outcome, work = std::move(work), &slots] {
      T value = work();
      {
        std::lock_guard lock(outcome->mutex);
        outcome->value = std::move(value);
      }
      outcome->done.notify_all();
      slots.give();
    }).detach();
  } catch (const std::system_error&) {
    slots.give();
    return busy;
  }
  std::unique_lock lock(outcome->mutex);
  outcome->done.wait_for(lock, timeout, [&] { return outcome->value.has_value(); });
  if (!outcome->value)
    return Error::with_message("no answer within " + std::to_string(timeout.count()) + " ms",
                               ETIMEDOUT);
  return std::move(*outcome->value);
}

// The IPv4 addresses of `name` (host byte order), a literal or a name,
// looked up with getaddrinfo within `timeout`.
Result<std::vector<uint32_t>> ipv4_addresses(const std::string& name,
                                             std::chrono::milliseconds timeout);

}  // namespace abx::egress
