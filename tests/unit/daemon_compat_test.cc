// Pieces of the E2B compatibility surface that need no sandbox: gzip
// negotiation and encoding, and the API keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/api_keys.h"
#include "daemon/gunzip.h"
#include "daemon/gzip.h"
#include "temp_store.h"

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
  Gunzip gunzip(1 << 20);
  std::string output;
  ASSERT_TRUE(gunzip.feed(compressed, [&](std::string_view piece) {
    output.append(piece);
    return true;
  }));
  EXPECT_TRUE(gunzip.finished());
  EXPECT_EQ(output, input);
}

// A sparse file's holes go out as ready-made blocks of zeros between
// deflate's own: the stream stays one valid gzip member (zlib checks the
// CRC and the size in the trailer).
TEST(DaemonGzip, ZerosBetweenDataDecodeToTheWholeFile) {
  const std::string head = "head of the file\n";
  std::string middle;
  for (int i = 0; i < 3000; ++i) middle += "line " + std::to_string(i) + "\n";
  const uint64_t hole = (uint64_t{3} << 20) + 12345;
  Gzip gzip;
  std::string compressed = gzip.feed(head);
  compressed += gzip.zeros(hole);
  compressed += gzip.feed(middle);
  compressed += gzip.zeros(7);
  compressed += gzip.zeros(1);
  compressed += gzip.finish();
  const std::string expected = head + std::string(hole, '\0') + middle + std::string(8, '\0');
  Gunzip gunzip(64 << 20);
  std::string output;
  ASSERT_TRUE(gunzip.feed(compressed, [&](std::string_view piece) {
    output.append(piece);
    return true;
  })) << gunzip.error();
  EXPECT_TRUE(gunzip.finished());
  EXPECT_EQ(output.size(), expected.size());
  EXPECT_TRUE(output == expected);
}

TEST(DaemonGzip, AGibibyteOfZerosIsAboutAMegabyteOfBlocks) {
  Gzip gzip;
  const std::string blocks = gzip.zeros(uint64_t{1} << 30);
  EXPECT_LT(blocks.size(), size_t{2} << 20);
  const std::string rest = gzip.finish();
  // The trailer's ISIZE is the size mod 2^32: 2^30.
  EXPECT_EQ(static_cast<unsigned char>(rest[rest.size() - 1]), 0x40);
}

class DaemonApiKeys : public ::testing::Test {
 protected:
  void SetUp() override { store_ = open_store(temp_.path()); }
  std::shared_ptr<ApiKeys> open_keys(const std::string& primary = "e2b_primary") {
    auto keys = ApiKeys::open(*store_, primary, dir_ / "api_keys");
    EXPECT_TRUE(keys) << keys.error().message();
    return keys ? *keys : nullptr;
  }
  testing::TempDir temp_{"abx-keys"};
  const fs::path& dir_ = temp_.path();
  std::unique_ptr<Store> store_;
};

TEST_F(DaemonApiKeys, TheDaemonKeyIsTheDefaultTeamsAdmin) {
  auto keys = open_keys();
  auto primary = keys->caller_for("e2b_primary");
  ASSERT_TRUE(primary);
  EXPECT_TRUE(primary->admin);
  EXPECT_EQ(primary->team, kDefaultTeam);
  EXPECT_EQ(primary->key_id.find("e2b_"), std::string::npos);  // never the key itself
  EXPECT_FALSE(keys->caller_for(""));
  EXPECT_FALSE(keys->caller_for("e2b_other"));
}

TEST_F(DaemonApiKeys, KeysAreStoredHashedAndRevokedAtOnce) {
  auto keys = open_keys();
  auto made = keys->create("acme", false, "ci runner");
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_EQ(made->key.rfind("e2b_", 0), 0u);
  auto caller = keys->caller_for(made->key);
  ASSERT_TRUE(caller);
  EXPECT_EQ(caller->team, "acme");
  EXPECT_FALSE(caller->admin);
  auto stored = store_->load_records("api_key");
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 2u);
  for (const auto& record : *stored) {
    EXPECT_EQ(record.data.dump().find(made->key), std::string::npos) << "the key itself is stored";
  }
  // A daemon restarted on the same store knows the key, and not the changed primary.
  auto reopened = open_keys("e2b_changed");
  EXPECT_TRUE(reopened->caller_for(made->key));
  EXPECT_FALSE(reopened->caller_for("e2b_changed"));
  ASSERT_TRUE(reopened->revoke(made->record.id));
  EXPECT_FALSE(reopened->caller_for(made->key));
  EXPECT_EQ(reopened->revoke(made->record.id).error().errnum, ENOENT);
}

TEST_F(DaemonApiKeys, TheLastAdminKeyStays) {
  auto keys = open_keys();
  const std::string primary_id = keys->caller_for("e2b_primary")->key_id;
  EXPECT_EQ(keys->revoke(primary_id).error().errnum, EBUSY);
  auto second = keys->create("default", true, "");
  ASSERT_TRUE(second);
  EXPECT_TRUE(keys->revoke(primary_id));
  EXPECT_FALSE(keys->caller_for("e2b_primary"));
}

TEST_F(DaemonApiKeys, BadTeamsAndNamesAreRefused) {
  auto keys = open_keys();
  EXPECT_EQ(keys->create("Acme Corp", false, "").error().errnum, kErrBadInput);
  EXPECT_EQ(keys->create("", false, "").error().errnum, kErrBadInput);
  EXPECT_EQ(keys->create("acme", false, "two\nlines").error().errnum, kErrBadInput);
  EXPECT_EQ(keys->create("acme", false, "\x1b[31mred").error().errnum, kErrBadInput);
  EXPECT_EQ(keys->create("acme", false, "evil\u202Etxt.exe").error().errnum, kErrBadInput);
  EXPECT_TRUE(keys->create("acme", false, "ci runner, café")) << "printable text is fine";
  EXPECT_EQ(keys->list().size(), 2u);
}

TEST_F(DaemonApiKeys, PlaintextKeysOfAnOlderAbxAreImportedHashed) {
  {
    std::ofstream legacy(dir_ / "api_keys");
    legacy << "e2b_legacy 1700000000 old runner\n";
  }
  auto keys = open_keys();
  auto caller = keys->caller_for("e2b_legacy");
  ASSERT_TRUE(caller);
  EXPECT_EQ(caller->team, kDefaultTeam);
  EXPECT_FALSE(caller->admin);
  EXPECT_FALSE(fs::exists(dir_ / "api_keys")) << "the plaintext file is gone";
}

}  // namespace
}  // namespace abx::daemon
