// RFC 3339 times as E2B's API writes them, read back: the daemon's list
// filters (startedAfter/startedBefore) and the CLI's local-time display.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace abx {

// "2026-12-01T10:00:00.123456+00:00", "…Z" → unix ms (digits past the
// millisecond are dropped); nullopt for anything else, a missing zone included.
std::optional<int64_t> parse_rfc3339_ms(std::string_view text);

}  // namespace abx
