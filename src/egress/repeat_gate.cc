#include "egress/repeat_gate.h"

namespace abx::egress {

std::optional<uint64_t> RepeatGate::pass(const std::string& key, Clock::time_point now) {
  if (auto it = seen_.find(key); it != seen_.end()) {
    if (now - it->second.since < window_) {
      ++it->second.held;
      return std::nullopt;
    }
    const uint64_t held = it->second.held;
    it->second = Seen{now, 0};
    return held;
  }
  if (seen_.size() >= max_keys_) forget_expired(now);
  if (seen_.size() >= max_keys_) seen_.clear();  // all fresh: a flood of names; start over
  seen_.emplace(key, Seen{now, 0});
  return 0;
}

void RepeatGate::forget_expired(Clock::time_point now) {
  for (auto it = seen_.begin(); it != seen_.end();)
    it = now - it->second.since >= window_ ? seen_.erase(it) : std::next(it);
}

}  // namespace abx::egress
