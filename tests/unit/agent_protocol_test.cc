// The agent protocol's TCP framing and Hello (agent/protocol.h), which read
// what anything in the sandbox's network may send.
#include <gtest/gtest.h>

#include <string>

#include "agent/protocol.h"

namespace abx::agent::proto {
namespace {

TEST(AgentFrames, AFrameArrivesWholeFromPiecesOfAnySize) {
  const std::string stream = frame("first") + frame("") + frame(std::string(5000, 'x'));
  FrameReader reader;
  std::vector<std::string> frames;
  std::string one;
  for (char c : stream) {
    reader.feed(&c, 1);
    while (reader.next(&one) == FrameReader::Next::kFrame) frames.push_back(one);
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], "first");
  EXPECT_EQ(frames[1], "");
  EXPECT_EQ(frames[2], std::string(5000, 'x'));
  EXPECT_EQ(reader.next(&one), FrameReader::Next::kMore);
}

TEST(AgentFrames, ALengthOverTheBoundEndsTheStream) {
  FrameReader reader;
  const uint32_t huge = static_cast<uint32_t>(kMaxMessage) + 1;
  reader.feed(reinterpret_cast<const char*>(&huge), sizeof huge);
  std::string one;
  EXPECT_EQ(reader.next(&one), FrameReader::Next::kTooBig);
}

TEST(AgentHello, RoundTripsAndTokensCompareWhole) {
  Hello hello;
  hello.token = "t0ken";
  Hello again;
  ASSERT_TRUE(decode(encode(hello), &again));
  EXPECT_EQ(again.version, kProtocolVersion);
  EXPECT_EQ(again.token, "t0ken");
  EXPECT_FALSE(decode(encode(hello) + "x", &again));
  EXPECT_TRUE(same_token("t0ken", "t0ken"));
  EXPECT_FALSE(same_token("t0ken", "t0kem"));
  EXPECT_FALSE(same_token("t0ken", "t0ke"));
  EXPECT_FALSE(same_token("", ""));  // no token configured accepts nobody
}

}  // namespace
}  // namespace abx::agent::proto
