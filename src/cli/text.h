// Pure text helpers of the CLI: shell quoting, K=V pairs, times, sizes.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace abx::cli {

// Quotes each word for a POSIX shell (only when needed) and joins them with spaces,
// so `bash -c` sees exactly the words the user typed.
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& words);

// "K=V" → {K, V}; `what` names the flag in the error ("--env").
Result<std::pair<std::string, std::string>> parse_key_value(std::string_view text,
                                                            std::string_view what);
Result<std::map<std::string, std::string>> parse_key_values(const std::vector<std::string>& items,
                                                            std::string_view what);

// RFC 3339 ("2026-11-29T15:04:05.123Z", "…+08:00") → seconds since the epoch.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);
// Seconds since the epoch → "2026-11-29 15:04:05" in the local time zone.
std::string format_local_time(std::int64_t epoch_seconds);
// An RFC 3339 string shown as local time; unparsable input comes back unchanged.
std::string rfc3339_to_local(std::string_view text);

// 1536 → "1.5 KiB".
std::string format_bytes(std::uint64_t bytes);
// "[#######-------]  42%  12.0 MiB/28.6 MiB  3.1 MiB/s", `width` cells of bar.
std::string format_progress(std::uint64_t done, std::uint64_t total, double seconds, int width);

// Pads each column to its widest cell; two spaces between columns.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace abx::cli
