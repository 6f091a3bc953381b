// Small encodings the wire needs: RFC 3339 times and the SHA-256 behind
// envd's file URL signatures (base64 is common/base64.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace abx::daemon::codec {

// 2026-11-29T15:17:51.123Z (UTC; millisecond precision when ms_precision).
std::string rfc3339(int64_t unix_sec, int64_t nsec = 0, bool ms_precision = false);

std::array<uint8_t, 32> sha256(std::string_view data);

}  // namespace abx::daemon::codec
