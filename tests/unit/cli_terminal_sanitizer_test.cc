#include <gtest/gtest.h>

#include <string>

#include "cli/text.h"

namespace abx::cli {
namespace {

// Feeds `text` one byte at a time: a sequence cut anywhere must come out the same.
std::string sanitize_bytewise(std::string_view text) {
  TerminalSanitizer sanitizer;
  std::string out;
  for (const char c : text) out += sanitizer.feed(std::string_view(&c, 1));
  return out + sanitizer.finish();
}

void expect_sanitized(std::string_view input, std::string_view expected) {
  EXPECT_EQ(sanitize_for_terminal(input), expected);
  EXPECT_EQ(sanitize_bytewise(input), expected);
}

TEST(TerminalSanitizer, PlainTextAndUtf8PassUnchanged) {
  expect_sanitized("hello\tworld\r\nline 2\n", "hello\tworld\r\nline 2\n");
  expect_sanitized("上海 200 · naïve 🙂\n", "上海 200 · naïve 🙂\n");
}

TEST(TerminalSanitizer, DropsOsc52ClipboardWrites) {
  expect_sanitized(
      "a\x1b]52;c;ZWNobyBwd25lZA==\x07"
      "b",
      "ab");
  expect_sanitized("a\x1b]52;c;ZWNobyBwd25lZA==\x1b\\b", "ab");
}

TEST(TerminalSanitizer, DropsTitleDcsApcAndPrivacyStrings) {
  expect_sanitized("\x1b]0;title\x07x", "x");
  expect_sanitized("\x1bP$q\"p\x1b\\x", "x");
  expect_sanitized("\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\x", "x");
}

TEST(TerminalSanitizer, KeepsColoursDropsOtherCsi) {
  expect_sanitized("\x1b[1;31mred\x1b[0m", "\x1b[1;31mred\x1b[0m");
  expect_sanitized("\x1b[38:2:1:2:3mx\x1b[m", "\x1b[38:2:1:2:3mx\x1b[m");
  // Cursor moves, screen clears, device reports, private modes, title reports.
  expect_sanitized(
      "a\x1b[2J\x1b[H\x1b[6n\x1b[?1049h\x1b[21t\x1b[>c"
      "b",
      "ab");
  expect_sanitized("a\x1b[?31mb", "ab");
  expect_sanitized("a\x1b[" + std::string(100, '1') + "mb", "ab");
}

TEST(TerminalSanitizer, DropsShortEscapesAndCharsetSwitches) {
  expect_sanitized(
      "a\x1b"
      "cb",
      "ab");                                   // full reset
  expect_sanitized("a\x1b(0q\x1b(Bb", "aqb");  // DEC line drawing
  expect_sanitized("a\x1b#8b", "ab");
  expect_sanitized(
      "a\x0e\x0f"
      "b",
      "ab");
}

TEST(TerminalSanitizer, DropsControlCharactersButNewlineTabReturn) {
  expect_sanitized(std::string("a\x00\x07\x08\x0b\x0c\x7f"
                               "b",
                               8),
                   "ab");
  expect_sanitized("a\r\n\tb", "a\r\n\tb");
}

TEST(TerminalSanitizer, DropsC1ControlsInUtf8AndReplacesInvalidBytes) {
  expect_sanitized(
      "a\xc2\x9b"
      "31mb",
      "a31mb");  // U+009B, CSI to some terminals
  expect_sanitized(
      "a\xc2\x9d"
      "52;c;x\xc2\x9c"
      "b",
      "a52;c;xb");
  expect_sanitized(
      "a\x9b"
      "b",
      "a\xef\xbf\xbd"
      "b");  // a raw 8-bit CSI
  expect_sanitized(
      "a\xff"
      "b",
      "a\xef\xbf\xbd"
      "b");
  expect_sanitized(
      "a\xc0\xaf"
      "b",
      "a\xef\xbf\xbd\xef\xbf\xbd"
      "b");  // overlong '/'
  expect_sanitized(
      "a\xed\xa0\x80"
      "b",
      "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
      "b");                                        // surrogate
  expect_sanitized("a\xe4\xb8", "a\xef\xbf\xbd");  // cut at the end
  expect_sanitized(
      "a\xe4\x1b]52;c;x\x07"
      "b",
      "a\xef\xbf\xbd"
      "b");
}

TEST(TerminalSanitizer, AnUnterminatedStringSwallowsTheRest) {
  expect_sanitized("a\x1b]52;c;" + std::string(10000, 'A'), "a");
}

TEST(TerminalSanitizer, ControlsAbortingSequencesAreFilteredToo) {
  expect_sanitized("a\x1b\nb", "a\nb");
  expect_sanitized("a\x1b[1\nb", "a\nb");
  expect_sanitized(
      "a\x1b]0;t\x18"
      "b",
      "ab");  // CAN aborts the string
}

}  // namespace
}  // namespace abx::cli
