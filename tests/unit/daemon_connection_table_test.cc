#include <gtest/gtest.h>

#include "daemon/connection_table.h"

namespace abx::daemon::http {
namespace {

using Kind = ConnectionTable::Kind;
using Admission = ConnectionTable::Admission;

ConnectionLimits limits(size_t connections, size_t overflow, size_t per_source = 1000,
                        size_t reserve = 0) {
  return ConnectionLimits{connections, per_source, reserve, overflow};
}

TEST(ConnectionTable, AdmitsUpToTheLimitThenHealthOnlyThenNothing) {
  ConnectionTable table(limits(2, 1));
  auto a = table.admit("a");
  auto b = table.admit("a");
  auto c = table.admit("a");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->kind(), Kind::regular);
  EXPECT_EQ(b->kind(), Kind::regular);
  EXPECT_EQ(c->kind(), Kind::health_only);
  EXPECT_EQ(c->set_busy(), Admission::serve);
  EXPECT_EQ(table.admit("a"), nullptr);
  EXPECT_EQ(table.open(), 3u);
  a.reset();
  auto d = table.admit("a");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind(), Kind::regular);
  c.reset();
  EXPECT_EQ(table.open(), 2u);
}

TEST(ConnectionTable, ANewConnectionAtTheLimitClosesTheLongestIdle) {
  ConnectionTable table(limits(2, 0));
  auto first = table.admit("a");
  auto second = table.admit("a");
  int closed_first = 0;
  int closed_second = 0;
  first->set_idle([&] { ++closed_first; });
  second->set_idle([&] { ++closed_second; });
  auto third = table.admit("a");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->kind(), Kind::regular);
  EXPECT_EQ(closed_first, 1);
  EXPECT_EQ(closed_second, 0);
  EXPECT_TRUE(first->evicted());
  EXPECT_EQ(first->set_busy(), Admission::closed);  // its place is gone: it closes
  EXPECT_EQ(second->set_busy(), Admission::serve);
  first.reset();  // gives back nothing twice
  EXPECT_EQ(table.open(), 2u);
  EXPECT_EQ(table.admit("a"), nullptr);  // nothing idle, no overflow
}

// The slowloris of issue 31: partial heads used to count as busy and were
// never closed, so they held every connection.
TEST(ConnectionTable, PartialHeadsGiveWayBeforeIdleConnectionsOldestFirst) {
  ConnectionTable table(limits(3, 0));
  auto idle = table.admit("client");
  auto old_head = table.admit("peer");
  auto new_head = table.admit("peer");
  std::vector<std::string> closed;
  idle->set_idle([&] { closed.push_back("idle"); });
  old_head->set_reading_head([&] { closed.push_back("old head"); });
  new_head->set_reading_head([&] { closed.push_back("new head"); });
  auto a = table.admit("client");
  auto b = table.admit("client");
  auto c = table.admit("client");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(closed, (std::vector<std::string>{"old head", "new head", "idle"}));
}

TEST(ConnectionTable, AKeepAliveConnectionReadingItsNextHeadIsAHeadAgain) {
  ConnectionTable table(limits(2, 0));
  auto head = table.admit("peer");
  auto keep_alive = table.admit("client");
  std::vector<std::string> closed;
  head->set_reading_head([&] { closed.push_back("head"); });
  keep_alive->set_idle([&] { closed.push_back("keep-alive"); });
  keep_alive->set_reading_head([&] { closed.push_back("keep-alive"); });
  ASSERT_TRUE(table.admit("x"));
  EXPECT_EQ(closed, (std::vector<std::string>{"head"}));  // the older head goes first
}

TEST(ConnectionTable, BusyConnectionsAreNeverClosed) {
  ConnectionTable table(limits(1, 1));
  auto busy = table.admit("a");
  int closed = 0;
  busy->set_reading_head([&] { ++closed; });
  EXPECT_EQ(busy->set_busy(), Admission::serve);
  auto next = table.admit("a");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->kind(), Kind::health_only);
  EXPECT_EQ(closed, 0);
  EXPECT_FALSE(table.evict_one());
}

TEST(ConnectionTable, EvictOneTakesAHeadBeforeAnIdleOne) {
  ConnectionTable table(limits(10, 0));
  auto idle = table.admit("a");
  auto head = table.admit("b");
  int closed_idle = 0;
  int closed_head = 0;
  idle->set_idle([&] { ++closed_idle; });
  head->set_reading_head([&] { ++closed_head; });
  EXPECT_TRUE(table.evict_one());
  EXPECT_EQ(closed_head, 1);
  EXPECT_EQ(closed_idle, 0);
  EXPECT_TRUE(table.evict_one());
  EXPECT_EQ(closed_idle, 1);
  EXPECT_FALSE(table.evict_one());
  EXPECT_EQ(table.open(), 0u);
}

TEST(ConnectionTable, TheLastDescriptorOnlyEverServesHealth) {
  ConnectionTable table(limits(10, 1));
  auto spare = table.admit("a", true);
  ASSERT_TRUE(spare);
  EXPECT_EQ(spare->kind(), Kind::health_only);
  EXPECT_EQ(spare->set_busy(), Admission::serve);
  EXPECT_EQ(table.admit("a", true), nullptr);
}

TEST(ConnectionTable, HealthOnlyConnectionsAreNotClosedForRegularOnes) {
  ConnectionTable table(limits(1, 1));
  auto regular = table.admit("a");
  EXPECT_EQ(regular->set_busy(), Admission::serve);
  auto health = table.admit("a");
  int closed = 0;
  health->set_reading_head([&] { ++closed; });
  EXPECT_FALSE(table.evict_one());
  EXPECT_EQ(closed, 0);
  health.reset();
  regular.reset();
  EXPECT_EQ(table.open(), 0u);
}

TEST(ConnectionTable, ASilentHealthOnlyConnectionGivesWayToANewOne) {
  ConnectionTable table(limits(1, 1));
  auto regular = table.admit("a");
  EXPECT_EQ(regular->set_busy(), Admission::serve);
  auto silent = table.admit("peer");
  int closed = 0;
  silent->set_reading_head([&] { ++closed; });
  auto health = table.admit("client");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->kind(), Kind::health_only);
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(table.open(), 2u);
}

TEST(ConnectionTable, OneAddressGivesWayToItselfNotToOthers) {
  ConnectionTable table(limits(10, 1, 2));
  auto other = table.admit("b");
  auto first = table.admit("a");
  auto second = table.admit("a");
  std::vector<std::string> closed;
  other->set_reading_head([&] { closed.push_back("b"); });
  first->set_reading_head([&] { closed.push_back("a1"); });
  second->set_reading_head([&] { closed.push_back("a2"); });
  auto third = table.admit("a");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->kind(), Kind::regular);
  EXPECT_EQ(closed, (std::vector<std::string>{"a1"}));
  // With every connection of its own busy, it gets no more regular ones.
  EXPECT_EQ(second->set_busy(), Admission::serve);
  EXPECT_EQ(third->set_busy(), Admission::serve);
  auto fourth = table.admit("a");
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->kind(), Kind::health_only);
  // Others still get theirs.
  auto another = table.admit("c");
  ASSERT_TRUE(another);
  EXPECT_EQ(another->kind(), Kind::regular);
  EXPECT_EQ(table.open(), 5u);
}

TEST(ConnectionTable, TheReserveIsForRequestsThatAuthenticated) {
  ConnectionTable table(limits(4, 0, 1000, 2));
  auto a = table.admit("x");
  auto b = table.admit("x");
  auto c = table.admit("x");
  auto d = table.admit("x");
  EXPECT_EQ(a->set_busy(), Admission::serve);
  EXPECT_EQ(b->set_busy(), Admission::serve);
  // Two requests without a credential hold all they may: the next must prove one.
  EXPECT_EQ(c->set_busy(), Admission::reserve_only);
  c->set_authenticated();
  EXPECT_EQ(d->set_busy(), Admission::reserve_only);
  // One without a credential ends its request: room again.
  a->set_idle([] {});
  d->set_idle([] {});
  EXPECT_EQ(d->set_busy(), Admission::serve);
  EXPECT_EQ(a->set_busy(), Admission::reserve_only);
  a.reset();
  EXPECT_EQ(table.open(), 3u);
}

}  // namespace
}  // namespace abx::daemon::http
