#include <gtest/gtest.h>

#include "daemon/control_requests.h"
#include "daemon/ended_logs.h"
#include "daemon/sandbox_log.h"

namespace abx::daemon {
namespace {

TEST(SandboxLog, KeepsTheNewestLinesOnlyEachBoundedAndOnOneLine) {
  SandboxLog log;
  for (size_t i = 0; i < SandboxLog::kMaxEntries + 5; ++i) log.add("info", std::to_string(i));
  auto all = log.since(0, 5000);
  ASSERT_EQ(all.size(), SandboxLog::kMaxEntries);
  EXPECT_EQ(all.front().message, "5");
  log.add("warn", std::string(5000, 'x') + "\n\x1b]52;c;x\x07");
  const auto last = log.since(0, 5000).back();
  EXPECT_EQ(last.level, "warn");
  EXPECT_LE(last.message.size(), SandboxLog::kMaxLine);
  EXPECT_EQ(last.message.find_first_of("\n\x1b\x07"), std::string::npos);
  EXPECT_EQ(log.since(0, 3).size(), 3u);
  EXPECT_TRUE(log.since(last.at_ms + 1, 10).empty());
}

TEST(EndedLogs, KeepsTheNewestLinesOfTheNewestSandboxesForTheirTeamAWhile) {
  EndedLogs ended;
  auto log = std::make_shared<SandboxLog>();
  for (size_t i = 0; i < SandboxLog::kMaxEntries; ++i) log->add("info", std::to_string(i));
  ended.keep("a", "team-1", log, 1000);
  auto kept = ended.find("a", "team-1", 1000);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->since(0, 5000).size(), EndedLogs::kMaxEntries);
  EXPECT_EQ(kept->since(0, 5000).back().message, std::to_string(SandboxLog::kMaxEntries - 1));
  EXPECT_EQ(ended.find("a", "team-2", 1000), nullptr) << "another team's";
  EXPECT_EQ(ended.find("a", "team-1", 1000 + EndedLogs::kKeepMs), nullptr) << "expired";
  for (size_t i = 0; i < EndedLogs::kMaxSandboxes; ++i)
    ended.keep("s" + std::to_string(i), "team-1", std::make_shared<SandboxLog>(), 2000);
  EXPECT_EQ(ended.find("a", "team-1", 2000), nullptr) << "the oldest went first";
  EXPECT_NE(ended.find("s0", "team-1", 2000), nullptr);
}

TEST(LogsQuery, StartIsUnixMillisecondsAndLimitOneToAThousand) {
  auto query = parse_logs_query({{"start", "1764583200000"}, {"limit", "10"}});
  ASSERT_TRUE(query);
  EXPECT_EQ(query->start_ms, 1764583200000);
  EXPECT_EQ(query->limit, 10u);
  EXPECT_EQ(parse_logs_query({})->limit, 1000u);
  for (const char* bad : {"", "0", "1001", "-1", "ten", "1.5"})
    EXPECT_FALSE(parse_logs_query({{"limit", bad}})) << bad;
  for (const char* bad : {"", "-1", "soon", "99999999999999999999"})
    EXPECT_FALSE(parse_logs_query({{"start", bad}})) << bad;
}

}  // namespace
}  // namespace abx::daemon
