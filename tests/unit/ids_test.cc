#include "common/ids.h"

#include <gtest/gtest.h>

#include <set>

namespace abx {

TEST(Ids, SandboxIdsAreLowercaseAlnumAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const std::string id = ids::sandbox_id();
    EXPECT_EQ(id.size(), 21u);
    EXPECT_TRUE(ids::is_valid_sandbox_id(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(Ids, RejectsIdsThatBreakHostRouting) {
  EXPECT_FALSE(ids::is_valid_sandbox_id("abc-def"));
  EXPECT_FALSE(ids::is_valid_sandbox_id("ABC"));
  EXPECT_FALSE(ids::is_valid_sandbox_id("../etc"));
  EXPECT_FALSE(ids::is_valid_sandbox_id(""));
}

TEST(Ids, ApiKeysMatchTheE2bPattern) {
  const std::string key = ids::api_key();
  ASSERT_EQ(key.rfind("e2b_", 0), 0u);
  EXPECT_EQ(key.size(), 44u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 4), std::string::npos);
}

}  // namespace abx
