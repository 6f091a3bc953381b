// Pure text helpers of the CLI: shell quoting, K=V pairs, times, sizes.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace abx::cli {

// Quotes each word for a POSIX shell (only when needed) and joins them with spaces,
// so `bash -c` sees exactly the words the user typed.
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& words);

// "a, b, c": a list in a table cell or a message.
std::string comma_join(const std::vector<std::string>& items);

// "K=V" → {K, V}; `what` names the flag in the error ("--env").
Result<std::pair<std::string, std::string>> parse_key_value(std::string_view text,
                                                            std::string_view what);
Result<std::map<std::string, std::string>> parse_key_values(const std::vector<std::string>& items,
                                                            std::string_view what);

// Seconds since the epoch → "2026-11-29 15:04:05" in the local time zone.
std::string format_local_time(std::int64_t epoch_seconds);
// An RFC 3339 string shown as local time; unparsable input comes back unchanged.
std::string rfc3339_to_local(std::string_view text);
// When a sandbox (the daemon's JSON of it) ends, as local time; "-" while it
// is paused (a paused sandbox has no deadline until resumed).
std::string ends_text(const nlohmann::json& sandbox);

// A size as Docker's --memory takes it, in MiB: "512m", "2g", "1.5G", "2048k",
// "1024" (no unit: MiB); a clear one-line error naming `flag` (when not empty) otherwise.
Result<uint32_t> parse_mib(const std::string& text, std::string_view flag);

// 1536 → "1.5 KiB".
std::string format_bytes(std::uint64_t bytes);

// Pads each column to its widest cell; two spaces between columns.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

// Makes a sandbox's output safe to show on the user's terminal: escape
// sequences (OSC 52 writes the clipboard, others set the title, report it
// back as input, remap keys) and control characters other than \n, \t and
// \r are dropped; SGR colours (ESC [ digits m) are kept; invalid UTF-8 and
// the C1 controls U+0080..U+009F become U+FFFD or are dropped. Output arrives
// in pieces: a sequence cut between two is handled whole.
class TerminalSanitizer {
 public:
  std::string feed(std::string_view data);
  // The end of the output: an unfinished UTF-8 character becomes U+FFFD.
  std::string finish();

 private:
  enum class State { text, escape, escape_intermediate, csi, string, string_escape };
  void on_byte(unsigned char byte, std::string& out);
  void on_text_byte(unsigned char byte, std::string& out);
  void on_utf8_continuation(unsigned char byte, std::string& out);
  void on_csi_byte(unsigned char byte, std::string& out);

  State state_ = State::text;
  std::string utf8_;      // the start of a multi-byte character
  size_t utf8_need_ = 0;  // its continuation bytes still to come
  std::string csi_;       // a CSI sequence read so far (kept only while it may be SGR)
  bool csi_is_sgr_ = true;
};

// The whole of `text`, sanitized as above.
std::string sanitize_for_terminal(std::string_view text);

}  // namespace abx::cli
