// The egress proxy's slot accounting (issue 31, item 6): one team's idle
// connections must never keep another team from getting a slot.
#include <gtest/gtest.h>

#include "egress/slots.h"

namespace abx::egress {
namespace {

ActivityStamp at(int64_t ms) { return std::make_shared<std::atomic<int64_t>>(ms); }

TEST(EgressSlots, AdmitsUnderEveryCap) {
  SlotTable table(4, 2);
  EXPECT_TRUE(table.admit(1, "a", 0).admitted);
  table.add(1, 1, "a", at(0));
  const auto second = table.admit(1, "a", 0);
  EXPECT_TRUE(second.admitted);
  EXPECT_FALSE(second.evict);
}

TEST(EgressSlots, RefusesPastTheSandboxCap) {
  SlotTable table(10, 2);
  table.add(1, 7, "a", at(0));
  table.add(2, 7, "a", at(0));
  const auto third = table.admit(7, "a", 0);
  EXPECT_FALSE(third.admitted);
  EXPECT_NE(third.refusal.find("sandbox"), std::string::npos);
  EXPECT_TRUE(table.admit(8, "a", 0).admitted);  // another sandbox of the team
}

TEST(EgressSlots, RefusesPastTheTeamCapWhateverTheSandbox) {
  SlotTable table(10, 10);
  table.add(1, 1, "b", at(0));
  table.add(2, 2, "b", at(0));
  const auto third = table.admit(3, "b", 2);
  EXPECT_FALSE(third.admitted);
  EXPECT_NE(third.refusal.find("team"), std::string::npos);
  EXPECT_TRUE(table.admit(4, "a", 2).admitted);
}

TEST(EgressSlots, AFullTableGivesASmallerTeamTheIdlestSlotOfTheLargest) {
  SlotTable table(4, 10);
  table.add(1, 1, "b", at(300));
  table.add(2, 2, "b", at(100));  // idle longest
  table.add(3, 3, "b", at(200));
  table.add(4, 4, "c", at(0));
  const auto admission = table.admit(9, "a", 0);
  ASSERT_TRUE(admission.admitted);
  ASSERT_TRUE(admission.evict);
  EXPECT_EQ(*admission.evict, 2u);
}

TEST(EgressSlots, ActivityDecidesWhichIsIdlest) {
  SlotTable table(2, 10);
  auto busy = at(100), quiet = at(200);
  table.add(1, 1, "b", busy);
  table.add(2, 1, "b", quiet);
  busy->store(500);  // it moved a byte since
  EXPECT_EQ(table.admit(9, "a", 0).evict, std::optional<uint64_t>(2));
}

TEST(EgressSlots, TheLargestTeamCannotTakeFromOthersWhenFull) {
  SlotTable table(3, 10);
  table.add(1, 1, "b", at(0));
  table.add(2, 1, "b", at(0));
  table.add(3, 2, "a", at(0));
  EXPECT_FALSE(table.admit(1, "b", 0).admitted);
  // a team one short of the largest would only swap places: it waits too
  SlotTable even(2, 10);
  even.add(1, 1, "b", at(0));
  even.add(2, 2, "a", at(0));
  EXPECT_FALSE(even.admit(2, "a", 0).admitted);
}

TEST(EgressSlots, RemovingFreesSlotsAndIsIdempotent) {
  SlotTable table(1, 1);
  table.add(1, 1, "a", at(0));
  EXPECT_FALSE(table.admit(1, "a", 0).admitted);
  table.remove(1);
  table.remove(1);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.held_by_team("a"), 0u);
  EXPECT_TRUE(table.admit(1, "a", 0).admitted);
}

}  // namespace
}  // namespace abx::egress
