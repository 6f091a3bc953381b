// Quotas without a daemon: what a team may make, and what the host can hold.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/quotas.h"
#include "temp_store.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;

class QuotasTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = open_store(dir_.path()); }
  static SandboxRow row(const std::string& team, uint32_t memory_mb) {
    SandboxRow r;
    r.owner = team;
    r.memory_mb = memory_mb;
    r.disk_size_mb = 1024;
    return r;
  }
  testing::TempDir dir_{"abx-quotas"};
  std::unique_ptr<Store> store_;
};

TEST_F(QuotasTest, ASandboxLimitCountsLiveAndPendingCreates) {
  QuotaConfig config;
  config.teams["acme"].max_sandboxes = 2;
  Quotas quotas(config, HostSize{1 << 20, 1 << 20}, *store_);
  std::vector<SandboxRow> live = {row("acme", 512), row("other", 512)};
  auto first = quotas.admit_create("acme", {}, [&] { return live; });
  ASSERT_TRUE(first) << first.error().message();
  // The first is still being made: it counts.
  auto second = quotas.admit_create("acme", {}, [&] { return live; });
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().errnum, kErrQuota);
  EXPECT_NE(second.error().message().find("--sandboxes"), std::string::npos);
  quotas.settle(*first);
  EXPECT_TRUE(quotas.admit_create("acme", {}, [&] { return live; }));
  EXPECT_TRUE(quotas.admit_create("other", {}, [&] { return live; })) << "another team's quota";
}

TEST_F(QuotasTest, TheRateLimitSaysWhenToComeBack) {
  QuotaConfig config;
  config.defaults.creates_per_minute = 1;
  Quotas quotas(config, HostSize{}, *store_);
  auto none = [] { return std::vector<SandboxRow>{}; };
  ASSERT_TRUE(quotas.admit_create("acme", {}, none));
  auto refused = quotas.admit_create("acme", {}, none);
  ASSERT_FALSE(refused);
  EXPECT_GT(refused.error().retry_after_s, 0);
  EXPECT_LE(refused.error().retry_after_s, 60);
}

TEST_F(QuotasTest, HostCapsAndSizesLargerThanTheHost) {
  QuotaConfig config;
  config.memory_percent = 50;
  Quotas quotas(config, HostSize{4096, 100000}, *store_);
  std::vector<SandboxRow> live = {row("a", 1024), row("b", 512)};
  EXPECT_TRUE(quotas.admit_create("c", Demand{512, 0, 60}, [&] { return live; }));
  auto over = quotas.admit_create("c", Demand{1024, 0, 60}, [&] { return live; });
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().errnum, kErrQuota);
  auto huge = quotas.admit_create("c", Demand{8192, 0, 60}, [&] { return live; });
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().errnum, kErrBadInput);
}

// By default limits overcommit (an idle sandbox uses a sliver of its limit):
// summed limits far past the host's memory are admitted, and only a host
// short of available memory refuses, saying so.
TEST_F(QuotasTest, MemoryLimitsOvercommitUntilTheHostIsShortOfMemory) {
  uint64_t available_mb = 8000;
  HostSize host{16384, 10000000, [&] { return available_mb; }};
  Quotas quotas(QuotaConfig{}, host, *store_);
  std::vector<SandboxRow> live;
  for (int i = 0; i < 100; ++i) live.push_back(row("t", 512));  // 50 GB of limits on 16 GB
  EXPECT_TRUE(quotas.admit_create("t", Demand{512, 0, 60}, [&] { return live; }));
  available_mb = 700;  // under 5 % of 16384
  auto pressed = quotas.admit_create("t", Demand{512, 0, 60}, [&] { return live; });
  ASSERT_FALSE(pressed);
  EXPECT_EQ(pressed.error().errnum, kErrQuota);
  EXPECT_NE(pressed.error().message().find("host memory pressure: only 700 MB"), std::string::npos);
  EXPECT_NE(pressed.error().message().find("config.json"), std::string::npos);
  auto huge = quotas.admit_create("t", Demand{32768, 0, 60}, [&] { return live; });
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().errnum, kErrBadInput) << "still no limit larger than the host";
}

TEST_F(QuotasTest, StoredQuotasWinAndSurviveARestart) {
  QuotaConfig config;
  config.teams["acme"].max_timeout_sec = 60;
  {
    Quotas quotas(config, HostSize{}, *store_);
    EXPECT_FALSE(quotas.check_timeout("acme", 61));
    TeamQuota raised;
    raised.max_timeout_sec = 3600;
    ASSERT_TRUE(quotas.set_team_quota("acme", raised));
  }
  Quotas reopened(config, HostSize{}, *store_);
  EXPECT_TRUE(reopened.check_timeout("acme", 3600));
}

TEST_F(QuotasTest, TheConfigFileIsCheckedFieldByField) {
  const fs::path file = dir_.path() / "config.json";
  std::ofstream(file) << R"({"quotas": {"default": {"maxSandboxes": 3},
                                         "teams": {"acme": {"createsPerMinute": 5}}},
                             "hostCaps": {"memoryPercent": 80}})";
  auto config = load_quota_config(file);
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ(config->defaults.max_sandboxes, 3u);
  EXPECT_EQ(config->teams["acme"].max_sandboxes, 3u) << "a team starts from the defaults";
  EXPECT_EQ(config->teams["acme"].creates_per_minute, 5u);
  EXPECT_EQ(config->memory_percent, 80);
  std::ofstream(file) << R"({"quotas": {"default": {"maxSandbox": 3}}})";
  auto typo = load_quota_config(file);
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message().find("maxSandbox"), std::string::npos);
  EXPECT_TRUE(load_quota_config(dir_.path() / "absent.json")) << "no file: the defaults";
}

}  // namespace
}  // namespace abx::daemon
