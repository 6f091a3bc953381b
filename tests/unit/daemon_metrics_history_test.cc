#include <gtest/gtest.h>

#include "daemon/control_requests.h"
#include "daemon/metrics_history.h"

namespace abx::daemon {
namespace {

runtime::Sandbox::Usage reading(uint64_t cpu_ns, uint64_t memory = 1 << 20) {
  return {memory, cpu_ns, 4096};
}

TEST(MetricsHistory, CpuShareIsSinceThePreviousReading) {
  MetricsHistory history(1'000'000);
  history.record(1'005'000, reading(2'500'000'000), 1);  // 2.5 s of CPU in 5 s
  history.record(1'010'000, reading(7'500'000'000), 2);  // 5 s more in 5 s, on 2 CPUs
  const auto samples = history.between(0, INT64_MAX);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[0].cpu_used_pct, 50.0);
  EXPECT_DOUBLE_EQ(samples[1].cpu_used_pct, 50.0);
  EXPECT_EQ(samples[1].memory_bytes, 1u << 20);
  EXPECT_EQ(samples[1].disk_used_bytes, 4096u);
}

TEST(MetricsHistory, CpuSpentBeforeHandOutCountsAtMostAllCpus) {
  MetricsHistory history(1'000'000);
  history.record(1'000'100, reading(9'000'000'000), 1);
  EXPECT_DOUBLE_EQ(history.latest()->cpu_used_pct, 100.0);
}

TEST(MetricsHistory, KeepsTheNewestBoundedSamples) {
  MetricsHistory history(0);
  const size_t total = MetricsHistory::kMaxSamples + 10;
  for (size_t i = 1; i <= total; ++i) history.record(static_cast<int64_t>(i) * 5000, reading(0), 1);
  const auto samples = history.between(INT64_MIN, INT64_MAX);
  ASSERT_EQ(samples.size(), MetricsHistory::kMaxSamples);
  EXPECT_EQ(samples.front().at_ms, 11 * 5000);
  EXPECT_EQ(samples.back().at_ms, static_cast<int64_t>(total) * 5000);
}

TEST(MetricsHistory, RangeIsInWholeSecondsBothEndsIncluded) {
  MetricsHistory history(0);
  for (int64_t at : {10'000, 14'999, 15'000, 20'500}) history.record(at, reading(0), 1);
  auto at_ms = [](const std::vector<MetricSample>& samples) {
    std::vector<int64_t> out;
    for (const auto& s : samples) out.push_back(s.at_ms);
    return out;
  };
  EXPECT_EQ(at_ms(history.between(14, 20)), (std::vector<int64_t>{14'999, 15'000, 20'500}));
  EXPECT_EQ(at_ms(history.between(10, 10)), (std::vector<int64_t>{10'000}));
  EXPECT_TRUE(history.between(0, 9).empty());
  EXPECT_FALSE(MetricsHistory(0).latest());
  history.record(20'000, reading(0), 1);  // older than the newest: dropped
  EXPECT_EQ(history.latest()->at_ms, 20'500);
}

TEST(MetricsRange, StartAndEndAreWholeUnixSeconds) {
  auto range = parse_metrics_range({{"start", "1764583200"}, {"end", "1764583260"}});
  ASSERT_TRUE(range);
  EXPECT_EQ(range->start_s, 1764583200);
  EXPECT_EQ(range->end_s, 1764583260);
  auto open = parse_metrics_range({});
  ASSERT_TRUE(open);
  EXPECT_EQ(open->start_s, INT64_MIN);
  EXPECT_EQ(open->end_s, INT64_MAX);
  for (const char* bad : {"", "soon", "1.5", "12x", "99999999999999999999"})
    EXPECT_FALSE(parse_metrics_range({{"end", bad}})) << bad;
  EXPECT_EQ(parse_metrics_range({{"start", "2"}, {"end", "1"}}).error().message(),
            "start: must not be after end");
}

}  // namespace
}  // namespace abx::daemon
