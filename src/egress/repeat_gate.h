// Lets the first of a run of identical events through and holds back the
// repeats for a while: a sandbox that asks the same DNS name a thousand times
// a second records it once per window, with how many were held back, so its
// flight record (a bounded ring) keeps its lifecycle events. Bounded: past
// max_keys remembered keys the oldest windows are forgotten (a forgotten key
// lets its next event through). Not thread-safe: one per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace abx::egress {

class RepeatGate {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RepeatGate(std::chrono::milliseconds window = std::chrono::seconds(10),
                      size_t max_keys = 4096)
      : window_(window), max_keys_(max_keys) {}
  // nullopt: a repeat within the window, held back. Otherwise the event goes
  // out, and the value is how many repeats were held back before it.
  std::optional<uint64_t> pass(const std::string& key, Clock::time_point now = Clock::now());

 private:
  struct Seen {
    Clock::time_point since;
    uint64_t held = 0;
  };
  void forget_expired(Clock::time_point now);
  std::chrono::milliseconds window_;
  size_t max_keys_;
  std::map<std::string, Seen> seen_;
};

}  // namespace abx::egress
