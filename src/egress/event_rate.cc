#include "egress/event_rate.h"

#include <algorithm>
#include <utility>

namespace abx::egress {

std::optional<uint64_t> EventRate::pass(uint32_t source, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(source);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_sources_) forget_idle(now);
    it = buckets_.emplace(source, Bucket{burst_, now}).first;
  }
  Bucket& bucket = it->second;
  const std::chrono::duration<double> waited = now - bucket.last;
  bucket.tokens = std::min(burst_, bucket.tokens + std::max(0.0, waited.count()) * per_second_);
  bucket.last = now;
  if (bucket.tokens < 1) {
    ++bucket.held;
    return std::nullopt;
  }
  bucket.tokens -= 1;
  return std::exchange(bucket.held, 0);
}

// Sources are sandbox addresses (the pool bounds them); past max_sources, those
// whose bucket has refilled are forgotten (a count they held goes with them),
// and if none has, all are: the bound holds whatever comes.
void EventRate::forget_idle(Clock::time_point now) {
  const auto refill = std::chrono::duration<double>(burst_ / per_second_);
  std::erase_if(buckets_, [&](const auto& entry) { return now - entry.second.last >= refill; });
  if (buckets_.size() >= max_sources_) buckets_.clear();
}

NetworkRecorder limit_rate(NetworkRecorder record, std::shared_ptr<EventRate> rate) {
  if (!record) return nullptr;
  return [record = std::move(record), rate = std::move(rate)](uint32_t source,
                                                              const NetworkEvent& event) {
    const std::optional<uint64_t> held = rate->pass(source);
    if (!held) return;
    if (*held == 0) return record(source, event);
    NetworkEvent counted = event;
    counted.held_back = *held;
    record(source, counted);
  };
}

}  // namespace abx::egress
