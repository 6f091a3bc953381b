#include <gtest/gtest.h>

#include "daemon/connection_table.h"

namespace abx::daemon::http {
namespace {

using Kind = ConnectionTable::Kind;

TEST(ConnectionTable, AdmitsUpToTheLimitThenHealthOnlyThenNothing) {
  ConnectionTable table(2, 1);
  auto a = table.admit();
  auto b = table.admit();
  auto c = table.admit();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->kind(), Kind::regular);
  EXPECT_EQ(b->kind(), Kind::regular);
  EXPECT_EQ(c->kind(), Kind::health_only);
  EXPECT_EQ(table.admit(), nullptr);
  EXPECT_EQ(table.open(), 3u);
  a.reset();
  auto d = table.admit();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind(), Kind::regular);
  c.reset();
  EXPECT_EQ(table.open(), 2u);
}

TEST(ConnectionTable, ANewConnectionAtTheLimitClosesTheLongestIdle) {
  ConnectionTable table(2, 0);
  auto first = table.admit();
  auto second = table.admit();
  int closed_first = 0;
  int closed_second = 0;
  first->set_idle([&] { ++closed_first; });
  second->set_idle([&] { ++closed_second; });
  auto third = table.admit();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->kind(), Kind::regular);
  EXPECT_EQ(closed_first, 1);
  EXPECT_EQ(closed_second, 0);
  EXPECT_FALSE(first->set_busy());  // its place is gone: it closes
  EXPECT_TRUE(second->set_busy());
  first.reset();  // gives back nothing twice
  EXPECT_EQ(table.open(), 2u);
  EXPECT_EQ(table.admit(), nullptr);  // nothing idle, no overflow
}

TEST(ConnectionTable, BusyConnectionsAreNeverClosed) {
  ConnectionTable table(1, 1);
  auto busy = table.admit();
  int closed = 0;
  busy->set_idle([&] { ++closed; });
  EXPECT_TRUE(busy->set_busy());
  auto next = table.admit();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->kind(), Kind::health_only);
  EXPECT_EQ(closed, 0);
  EXPECT_FALSE(table.evict_longest_idle());
}

TEST(ConnectionTable, TheLastDescriptorOnlyEverServesHealth) {
  ConnectionTable table(10, 1);
  auto spare = table.admit(true);
  ASSERT_TRUE(spare);
  EXPECT_EQ(spare->kind(), Kind::health_only);
  EXPECT_EQ(table.admit(true), nullptr);
}

TEST(ConnectionTable, HealthOnlyConnectionsAreNotClosedForOthers) {
  ConnectionTable table(1, 1);
  auto regular = table.admit();
  auto health = table.admit();
  int closed = 0;
  health->set_idle([&] { ++closed; });
  EXPECT_FALSE(table.evict_longest_idle());
  EXPECT_EQ(closed, 0);
  health.reset();
  regular.reset();
  EXPECT_EQ(table.open(), 0u);
}

}  // namespace
}  // namespace abx::daemon::http
