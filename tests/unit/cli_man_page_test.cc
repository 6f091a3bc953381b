// roff_escape: text from the command tree must reach `man` as the same words,
// never as roff requests or escapes.
#include <gtest/gtest.h>

#include "cli/man_page.h"

namespace abx::cli {
namespace {

TEST(RoffEscape, HyphensAndBackslashesAreEscaped) {
  EXPECT_EQ(roff_escape("--env K=V"), "\\-\\-env K=V");
  EXPECT_EQ(roff_escape("C:\\dir"), "C:\\edir");
}

TEST(RoffEscape, ALineStartingWithADotOrQuoteIsNotARequest) {
  EXPECT_EQ(roff_escape(".dockerignore"), "\\&.dockerignore");
  EXPECT_EQ(roff_escape("a\n'b"), "a\n\\&'b");
  EXPECT_EQ(roff_escape("a.b"), "a.b");
}

TEST(RoffEscape, NonAsciiBecomesANamedCodePoint) {
  EXPECT_EQ(roff_escape("a \xE2\x80\xA6 b"), "a \\[u2026] b");  // …
  EXPECT_EQ(roff_escape("\xC3\x97"), "\\[u00D7]");              // ×
  EXPECT_EQ(roff_escape("\xF0\x9F\x98\x80"), "\\[u1F600]");
  EXPECT_EQ(roff_escape("\xE2\x80"), "\\[uFFFD]\\[uFFFD]");  // cut short
}

}  // namespace
}  // namespace abx::cli
