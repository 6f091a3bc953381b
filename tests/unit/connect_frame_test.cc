#include "common/connect_frame.h"

#include <gtest/gtest.h>

namespace abx::connect {

TEST(ConnectFrame, RoundTripsSplitAcrossReads) {
  const std::string wire = encode(R"({"a":1})") + encode("{}", kFlagEndStream);
  FrameReader reader;
  for (char c : wire) reader.feed(std::string_view(&c, 1));
  auto first = reader.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->payload, R"({"a":1})");
  EXPECT_FALSE(first->end_stream());
  auto last = reader.next();
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->end_stream());
  EXPECT_FALSE(reader.next());
}

TEST(ConnectFrame, WaitsForTheWholeFrame) {
  FrameReader reader;
  const std::string wire = encode("hello");
  reader.feed(wire.substr(0, 7));
  EXPECT_FALSE(reader.next());
  reader.feed(wire.substr(7));
  EXPECT_EQ(reader.next()->payload, "hello");
}

TEST(ConnectFrame, RefusesOversizedFrames) {
  FrameReader reader;
  reader.feed(std::string("\0\xff\xff\xff\xff", 5));
  std::string error;
  EXPECT_FALSE(reader.next(&error));
  EXPECT_NE(error.find("exceeds"), std::string::npos);
}

}  // namespace abx::connect
