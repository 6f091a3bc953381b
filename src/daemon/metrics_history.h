// A sandbox's resource use over time, for E2B's get_metrics(start, end): the
// daemon's one sampler (Service's sweep, every kSampleInterval) records each
// live sandbox's cgroup reading here; a sandbox's history goes with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/runtime.h"

namespace abx::daemon {

struct MetricSample {
  int64_t at_ms = 0;        // unix time of the reading
  double cpu_used_pct = 0;  // of the sandbox's CPUs, since the reading before
  uint64_t memory_bytes = 0;
  uint64_t disk_used_bytes = 0;
  uint64_t net_rx_bytes = 0;  // received since the sandbox started
  uint64_t net_tx_bytes = 0;  // sent since the sandbox started
};

class MetricsHistory {
 public:
  // E2B collects every 5 s too. The bound keeps the last hour: 720 samples of
  // 48 bytes, about 34 KB for a sandbox that lives that long.
  static constexpr auto kSampleInterval = std::chrono::seconds(5);
  static constexpr size_t kMaxSamples = 720;

  // `started_ms`: the sandbox's start, against which the first reading's CPU
  // time is measured.
  explicit MetricsHistory(int64_t started_ms) : last_at_ms_(started_ms) {}

  // A reading taken at `at_ms`; CPU use is the share of `cpus` used since
  // the previous reading. The oldest sample goes once kMaxSamples are kept;
  // a reading no newer than the last sample is dropped.
  void record(int64_t at_ms, const runtime::Sandbox::Usage& usage, uint32_t cpus);
  // Samples whose second (unix time, rounded down) is within [from_s, to_s],
  // oldest first: E2B's query parameters are whole seconds.
  std::vector<MetricSample> between(int64_t from_s, int64_t to_s) const;
  std::optional<MetricSample> latest() const;

 private:
  mutable std::mutex mutex_;
  std::deque<MetricSample> samples_;
  int64_t last_at_ms_;
  uint64_t last_cpu_ns_ = 0;
};

}  // namespace abx::daemon
