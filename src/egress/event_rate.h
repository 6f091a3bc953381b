// Bounds how many connection and request events one sandbox can have
// recorded: a token bucket per sandbox address (`per_second` refilled, at most
// `burst` saved). An event over the rate is held back and counted; the next
// one that goes carries the count. A sandbox opening thousands of connections
// a second so records a few a second with how many it left out, and cannot
// push its own older history out of its bounded flight record in seconds, nor
// cost the daemon a disk write per connection. Thread-safe: the proxy's
// connection threads share one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "egress/network_event.h"

namespace abx::egress {

class EventRate {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr double kPerSecond = 20, kBurst = 200;
  explicit EventRate(double per_second = kPerSecond, double burst = kBurst,
                     size_t max_sources = 4096)
      : per_second_(per_second), burst_(burst), max_sources_(max_sources) {}
  // nullopt: over the rate, held back (counted). Otherwise the event goes,
  // and the value is how many of this source were held back before it.
  std::optional<uint64_t> pass(uint32_t source, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    double tokens;
    Clock::time_point last;
    uint64_t held = 0;
  };
  void forget_idle(Clock::time_point now);
  const double per_second_, burst_;
  const size_t max_sources_;
  std::mutex mutex_;
  std::unordered_map<uint32_t, Bucket> buckets_;
};

// `record`, with each source's events bounded by `rate`: a held-back event is
// dropped, the next one that goes says how many were (NetworkEvent::held_back).
NetworkRecorder limit_rate(NetworkRecorder record, std::shared_ptr<EventRate> rate);

}  // namespace abx::egress
