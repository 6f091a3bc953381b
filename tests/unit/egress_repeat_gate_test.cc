// The DNS events' flood bound: one event per key and window, the repeats counted.
#include <gtest/gtest.h>

#include "egress/repeat_gate.h"

namespace abx::egress {
namespace {

using namespace std::chrono_literals;

TEST(RepeatGate, PassesOncePerWindowAndCountsWhatItHeld) {
  RepeatGate gate(10s);
  const auto t0 = RepeatGate::Clock::time_point{} + 1h;
  EXPECT_EQ(gate.pass("a", t0), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(gate.pass("a", t0 + 1s).has_value());
  EXPECT_EQ(gate.pass("b", t0 + 2s), 0u);  // another key is its own
  EXPECT_EQ(gate.pass("a", t0 + 10s), 5u);
  EXPECT_FALSE(gate.pass("a", t0 + 11s).has_value());
  EXPECT_EQ(gate.pass("a", t0 + 25s), 1u);
}

TEST(RepeatGate, StaysBoundedUnderAFloodOfKeys) {
  RepeatGate gate(10s, 3);
  const auto t0 = RepeatGate::Clock::time_point{} + 1h;
  for (const char* key : {"a", "b", "c", "d"}) EXPECT_EQ(gate.pass(key, t0), 0u);
  // The table was full of fresh keys when "d" came: it started over, so "a" passes again.
  EXPECT_EQ(gate.pass("a", t0 + 1s), 0u);
  EXPECT_FALSE(gate.pass("d", t0 + 1s).has_value());
}

}  // namespace
}  // namespace abx::egress
