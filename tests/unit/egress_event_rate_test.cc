// The connection and request events' flood bound: a token bucket per sandbox,
// what it holds back counted into the next event that goes.
#include <gtest/gtest.h>

#include <vector>

#include "egress/event_rate.h"

namespace abx::egress {
namespace {

using namespace std::chrono_literals;

TEST(EventRate, PassesABurstThenTheRateAndCountsWhatItHeld) {
  EventRate rate(10, 5);
  const auto t0 = EventRate::Clock::time_point{} + 1h;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rate.pass(1, t0), 0u) << i;
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(rate.pass(1, t0).has_value());
  EXPECT_EQ(rate.pass(2, t0), 0u) << "another sandbox has its own bucket";
  EXPECT_EQ(rate.pass(1, t0 + 101ms), 1000u) << "a tenth of a second: one token";
  EXPECT_FALSE(rate.pass(1, t0 + 101ms).has_value());
  EXPECT_EQ(rate.pass(1, t0 + 250ms), 1u);
  // Over a long flood, what goes is the burst plus the rate times the time.
  int passed = 0;
  uint64_t held = 0;
  for (int ms = 0; ms < 10000; ++ms)  // a thousand a second for ten seconds
    if (auto went = rate.pass(3, t0 + std::chrono::milliseconds(ms))) ++passed, held += *went;
  EXPECT_NEAR(passed, 5 + 100, 2);
  // Every event is told: recorded, or counted in one that was (the next after the flood).
  const std::optional<uint64_t> after = rate.pass(3, t0 + 20s);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(held + *after + static_cast<uint64_t>(passed), 10000u);
}

TEST(EventRate, StaysBoundedUnderManySources) {
  EventRate rate(1, 1, 2);
  const auto t0 = EventRate::Clock::time_point{} + 1h;
  EXPECT_EQ(rate.pass(1, t0), 0u);
  EXPECT_FALSE(rate.pass(1, t0).has_value());
  EXPECT_EQ(rate.pass(2, t0), 0u);
  EXPECT_EQ(rate.pass(3, t0 + 10ms), 0u);  // none idle long enough: the table starts over
  EXPECT_EQ(rate.pass(1, t0 + 20ms), 0u) << "forgotten, with its count";
}

TEST(EventRate, TheRecorderSeesTheCountInTheNextEvent) {
  std::vector<NetworkEvent> seen;
  auto record = limit_rate([&](uint32_t, const NetworkEvent& e) { seen.push_back(e); },
                           std::make_shared<EventRate>(0.001, 2));
  NetworkEvent event;
  event.kind = NetworkEvent::Kind::kConnection;
  for (int i = 0; i < 50; ++i) record(7, event);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].held_back, 0u);
  EXPECT_EQ(seen[1].held_back, 0u);
  EXPECT_FALSE(limit_rate(nullptr, std::make_shared<EventRate>())) << "no recorder, none made";
}

}  // namespace
}  // namespace abx::egress
