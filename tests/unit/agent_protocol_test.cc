// The agent protocol's TCP framing, Hello and the requests only a TCP client
// sends (agent/protocol.h), which read what anything in the sandbox's network
// may send.
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

// kInput and kResize, which a TCP client sends: bounded on decode.
TEST(AgentRequests, InputAndResizeRoundTripWithinTheirBounds) {
  Request input;
  input.type = RequestType::kInput;
  input.pid = 42;
  input.input = std::string(kMaxInputBytes, 'x');
  Request again;
  ASSERT_TRUE(decode(encode(input), &again));
  EXPECT_EQ(again.type, RequestType::kInput);
  EXPECT_EQ(again.pid, 42);
  EXPECT_EQ(again.input, input.input);
  input.input += "y";
  EXPECT_FALSE(decode(encode(input), &again)) << "more than kMaxInputBytes at once";

  Request resize;
  resize.type = RequestType::kResize;
  resize.pid = 7;
  resize.cols = 120;
  resize.rows = 40;
  ASSERT_TRUE(decode(encode(resize), &again));
  EXPECT_EQ(again.cols, 120);
  EXPECT_EQ(again.rows, 40);
  resize.rows = 0;
  EXPECT_FALSE(decode(encode(resize), &again)) << "a terminal of no rows";
  resize.rows = 40;
  EXPECT_FALSE(decode(encode(resize) + "x", &again)) << "trailing bytes";
}

}  // namespace
}  // namespace abx::agent::proto
