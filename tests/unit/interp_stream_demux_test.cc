#include <gtest/gtest.h>

#include "interp/languages.h"
#include "interp/stream_demux.h"

namespace abx::interp {
namespace {

std::string describe(const std::vector<StreamPiece>& pieces) {
  std::string out;
  for (const auto& piece : pieces) out += (piece.protocol ? "P[" : "T[") + piece.text + "]";
  return out;
}

TEST(InterpStreamDemux, SeparatesProtocolLinesFromText) {
  StreamDemux demux("@@");
  EXPECT_EQ(describe(demux.feed("hello@@{\"a\":1}\nworld\n")), "T[hello]P[{\"a\":1}]T[world\n]");
}

TEST(InterpStreamDemux, WaitsForSplitTokensLinesAndCharacters) {
  StreamDemux demux("@@");
  EXPECT_EQ(describe(demux.feed("ab@")), "T[ab]");
  EXPECT_EQ(describe(demux.feed("@{\"x\"")), "");
  EXPECT_EQ(describe(demux.feed(":2}\n\xC3")), "P[{\"x\":2}]");
  EXPECT_EQ(describe(demux.feed("\xBC!")), "T[\xC3\xBC!]");
  EXPECT_EQ(describe(demux.feed("@")), "");
  EXPECT_EQ(describe(demux.finish()), "T[@]");
}

TEST(InterpBashQuote, KeepsEveryByteOnOneLine) {
  EXPECT_EQ(bash_ansi_c_quote("a'b\\c\nd\te"), "$'a\\'b\\\\c\\nd\\x09e'");
}

}  // namespace
}  // namespace abx::interp
