#include <gtest/gtest.h>

#include "common/rfc3339.h"

namespace abx {
namespace {

constexpr int64_t kAt = 1795964645000;  // 2026-11-29T15:04:05Z in unix ms

TEST(Rfc3339, ParsesUtcAndOffsets) {
  EXPECT_EQ(parse_rfc3339_ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29T15:04:05Z"), kAt);
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29t15:04:05z"), kAt);
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29 15:04:05Z"), kAt);
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29T23:04:05+08:00"), kAt);
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29T10:04:05-05:00"), kAt);
}

TEST(Rfc3339, KeepsMillisecondsAndDropsFinerDigits) {
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29T15:04:05.1Z"), kAt + 100);
  EXPECT_EQ(parse_rfc3339_ms("2026-11-29T15:04:05.123456789+00:00"), kAt + 123);
}

TEST(Rfc3339, RefusesWhatIsNotOne) {
  for (const char* text :
       {"", "yesterday", "2026-11-29T15:04:05", "2026-11-29T15:04:05.Z", "2026-11-29T15:04:05+8:00",
        "2026-11-29T15:04:05+0a:00", "2026-11-29T15:04:05Z trailing", "2026-11-29"}) {
    EXPECT_FALSE(parse_rfc3339_ms(text).has_value()) << text;
  }
  EXPECT_FALSE(parse_rfc3339_ms(std::string_view("2026-11-29T15:04:05Z\0x", 22)).has_value());
}

}  // namespace
}  // namespace abx
