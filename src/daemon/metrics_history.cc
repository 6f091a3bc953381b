#include "daemon/metrics_history.h"

#include <algorithm>

namespace abx::daemon {

void MetricsHistory::record(int64_t at_ms, const runtime::Sandbox::Usage& usage, uint32_t cpus) {
  std::lock_guard lock(mutex_);
  // A first query's reading and the sampler's may cross: keep time order.
  if (!samples_.empty() && at_ms <= samples_.back().at_ms) return;
  const double wall_ns = static_cast<double>(std::max<int64_t>(1, at_ms - last_at_ms_)) * 1e6;
  const uint64_t cpu_ns =
      usage.cpu_usage_ns >= last_cpu_ns_ ? usage.cpu_usage_ns - last_cpu_ns_ : 0;
  // A pooled sandbox's cgroup counts the CPU its start took before the
  // sandbox was handed out: no share above all of its CPUs.
  const double pct = 100.0 * static_cast<double>(cpu_ns) / (wall_ns * std::max(1u, cpus));
  samples_.push_back({at_ms, std::min(pct, 100.0), usage.memory_bytes, usage.disk_used_bytes,
                      usage.net_rx_bytes, usage.net_tx_bytes});
  if (samples_.size() > kMaxSamples) samples_.pop_front();
  last_at_ms_ = at_ms;
  last_cpu_ns_ = usage.cpu_usage_ns;
}

std::vector<MetricSample> MetricsHistory::between(int64_t from_s, int64_t to_s) const {
  std::lock_guard lock(mutex_);
  std::vector<MetricSample> out;
  for (const MetricSample& s : samples_) {
    const int64_t second = s.at_ms / 1000;
    if (second >= from_s && second <= to_s) out.push_back(s);
  }
  return out;
}

std::optional<MetricSample> MetricsHistory::latest() const {
  std::lock_guard lock(mutex_);
  if (samples_.empty()) return std::nullopt;
  return samples_.back();
}

}  // namespace abx::daemon
