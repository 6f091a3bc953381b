// The flight record's store (daemon/event_journal.h) on a temp dir: bounded,
// numbered across reopening, its team's only.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/event_journal.h"
#include "temp_dir.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;

uint64_t bytes_under(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) total += entry.file_size();
  return total;
}

TEST(EventJournal, KeepsBetweenItsBoundAndTwiceThatNewestFirstToGo) {
  testing::TempDir dir("abx-events");
  EventJournals journals(dir.path());
  auto journal = journals.open("sbx1", "acme");
  ASSERT_TRUE(journal);
  const std::string filler(1024, 'x');
  const uint64_t bound = journals.limits().max_bytes;
  const uint64_t written = 3 * bound / 1024;
  for (uint64_t i = 0; i < written; ++i) journal->record("commands", "started", {{"f", filler}});
  EXPECT_LE(bytes_under(dir.path()), 2 * bound);
  EXPECT_GE(bytes_under(dir.path()), bound);
  auto kept = journals.read("sbx1", "acme", 0, "");
  ASSERT_TRUE(kept) << kept.error().message();
  ASSERT_FALSE(kept->empty());
  EXPECT_EQ(kept->back()["seq"], written) << "the newest stays";
  for (size_t i = 1; i < kept->size(); ++i)
    EXPECT_EQ((*kept)[i]["seq"], (*kept)[i - 1]["seq"].get<uint64_t>() + 1) << "no gap";
  EXPECT_FALSE(kept->front().contains("team"));
}

TEST(EventJournal, NumberingGoesOnAfterReopeningAndOtherTeamsSeeNothing) {
  testing::TempDir dir("abx-events");
  EventJournals journals(dir.path());
  journals.open("sbx2", "acme")->record("lifecycle", "created");
  journals.open("sbx2", "acme")->record("lifecycle", "adopted");  // a daemon restart
  auto kept = journals.read("sbx2", "acme", 0, "");
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->size(), 2u);
  EXPECT_EQ((*kept)[1]["seq"], 2);
  EXPECT_EQ((*kept)[1]["event"], "adopted");
  EXPECT_EQ(journals.read("sbx2", "acme", 1, "")->size(), 1u);
  EXPECT_TRUE(journals.read("sbx2", "acme", 2, "")->empty());
  EXPECT_TRUE(journals.read("sbx2", "acme", 0, "commands")->empty());
  auto foreign = journals.read("sbx2", "other", 0, "");
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().errnum, ENOENT);
  EXPECT_FALSE(journals.open("../escape", "acme")) << "an id is [a-z0-9]+, never a path";
  EXPECT_FALSE(journals.read("../escape", "acme", 0, ""));
}

// config.json's "events" sets the bound and the retention; nonsense is refused whole.
TEST(EventJournal, TheOperatorSetsTheBoundAndTheRetention) {
  testing::TempDir dir("abx-event-config");
  const auto config = dir.path() / "config.json";
  const auto limits_from = [&](const std::string& text) {
    std::ofstream(config) << text;
    return load_event_limits(config);
  };
  auto none = load_event_limits(dir.path() / "missing.json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->max_bytes, uint64_t{4} << 20);
  EXPECT_EQ(none->retention, std::chrono::hours(24));
  auto set = limits_from(R"({"events": {"maxMiB": 1, "retentionHours": 72}})");
  ASSERT_TRUE(set) << set.error().message();
  EXPECT_EQ(set->max_bytes, uint64_t{1} << 20);
  EXPECT_EQ(set->retention, std::chrono::hours(72));
  EXPECT_TRUE(set->enabled);
  auto off = limits_from(R"({"events": {"enabled": false}})");
  ASSERT_TRUE(off) << off.error().message();
  EXPECT_FALSE(off->enabled);
  EXPECT_FALSE(EventJournals(dir.path() / "off", *off).open("sbx3", "acme")) << "no record";
  for (const char* bad :
       {R"({"events": {"maxMiB": 0}})", R"({"events": {"maxMiB": "4"}})",
        R"({"events": {"enabled": 1}})", R"({"events": {"retentionHours": 9000}})",
        R"({"events": {"size": 4}})", R"({"events": []})"}) {
    auto refused = limits_from(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message().find("events."), std::string::npos) << bad;
  }

  EventJournals small(dir.path() / "events", *set);
  auto journal = small.open("sbx2", "acme");
  ASSERT_TRUE(journal);
  const std::string filler(1024, 'x');
  for (int i = 0; i < 3 * 1024; ++i) journal->record("commands", "started", {{"f", filler}});
  EXPECT_LE(bytes_under(dir.path() / "events"), uint64_t{2} << 20);
  EXPECT_GE(bytes_under(dir.path() / "events"), uint64_t{1} << 20);
}

// Past the retention, an ended sandbox's record goes, both halves; a live
// sandbox's and a recent one's stay.
TEST(EventJournal, TheSweepRemovesRecordsPastTheirRetentionOnly) {
  testing::TempDir dir("abx-events");
  EventJournals journals(dir.path());
  for (const char* id : {"ended1", "recent1", "live1"})
    journals.open(id, "acme")->record("lifecycle", "created");
  std::ofstream(dir.path() / "ended1.jsonl.1") << "{}\n";
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(25);
  for (const char* name : {"ended1.jsonl", "ended1.jsonl.1", "live1.jsonl"})
    fs::last_write_time(dir.path() / name, old);
  fs::last_write_time(dir.path() / "recent1.jsonl",
                      fs::file_time_type::clock::now() - std::chrono::hours(23));
  journals.sweep({"live1"});
  EXPECT_FALSE(fs::exists(dir.path() / "ended1.jsonl"));
  EXPECT_FALSE(fs::exists(dir.path() / "ended1.jsonl.1"));
  EXPECT_FALSE(journals.read("ended1", "acme", 0, ""));
  EXPECT_TRUE(journals.read("recent1", "acme", 0, ""));
  EXPECT_TRUE(journals.read("live1", "acme", 0, ""));
}

}  // namespace
}  // namespace abx::daemon
