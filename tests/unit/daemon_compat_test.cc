// Pieces of the E2B compatibility surface that need no sandbox: gzip
// negotiation and encoding, and the API key files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/api_keys.h"
#include "daemon/gunzip.h"
#include "daemon/gzip.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;

TEST(DaemonGzip, OnlyAnExplicitGzipRequestGetsGzip) {
  EXPECT_TRUE(wants_gzip("gzip"));
  EXPECT_TRUE(wants_gzip(" GZIP ;q=1"));
  EXPECT_TRUE(wants_gzip("gzip, identity;q=0"));
  EXPECT_FALSE(wants_gzip(""));
  EXPECT_FALSE(wants_gzip("gzip, deflate"));  // httpx's default list
  EXPECT_FALSE(wants_gzip("gzip;q=0"));
  EXPECT_FALSE(wants_gzip("identity"));
}

TEST(DaemonGzip, RoundTripsThroughGunzip) {
  std::string input;
  for (int i = 0; i < 10000; ++i) input += "line " + std::to_string(i) + "\n";
  Gzip gzip;
  std::string compressed = gzip.feed(input.substr(0, 1000));
  compressed += gzip.feed(input.substr(1000));
  compressed += gzip.finish();
  EXPECT_LT(compressed.size(), input.size() / 3);
  Gunzip gunzip;
  std::string output;
  ASSERT_TRUE(gunzip.feed(compressed, [&](std::string_view piece) {
    output.append(piece);
    return true;
  }));
  EXPECT_TRUE(gunzip.finished());
  EXPECT_EQ(output, input);
}

class DaemonApiKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("abx-keys-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DaemonApiKeys, ExtraKeysAreAcceptedOnceCreated) {
  const fs::path file = extra_keys_path(dir_);
  ApiKeys keys("e2b_primary", file);
  auto primary = keys.caller_for("e2b_primary");
  ASSERT_TRUE(primary);
  EXPECT_TRUE(primary->admin);  // the daemon's own key
  EXPECT_EQ(primary->team, kDefaultTeam);
  EXPECT_EQ(primary->key_id.find("e2b_"), std::string::npos);  // never the key itself
  EXPECT_FALSE(keys.caller_for(""));
  auto created = create_extra_key(file, "ci runner");
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_EQ(created->key.rfind("e2b_", 0), 0u);
  EXPECT_EQ(created->key.size(), 44u);
  auto extra = keys.caller_for(created->key);
  ASSERT_TRUE(extra);
  EXPECT_FALSE(extra->admin);
  EXPECT_NE(extra->key_id, primary->key_id);
  EXPECT_FALSE(keys.caller_for("e2b_other"));
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  auto listed = read_extra_keys(file);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).name, "ci runner");
  EXPECT_GT(listed->at(0).created_unix, 0);
}

TEST_F(DaemonApiKeys, MissingFileIsEmptyAndNamesAreOneLine) {
  auto listed = read_extra_keys(dir_ / "absent");
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
  EXPECT_FALSE(create_extra_key(extra_keys_path(dir_), "two\nlines"));
}

}  // namespace
}  // namespace abx::daemon
