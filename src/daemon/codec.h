// Small encodings the wire needs: base64 (proto3 bytes, Basic auth), RFC 3339
// times, and the SHA-256 behind envd's file URL signatures.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace abx::daemon::codec {

std::string base64_encode(std::string_view bytes, bool pad = true);
// Accepts standard and URL-safe alphabets, with or without padding.
std::optional<std::string> base64_decode(std::string_view text);

// 2026-11-29T15:17:51.123Z (UTC; millisecond precision when ms_precision).
std::string rfc3339(int64_t unix_sec, int64_t nsec = 0, bool ms_precision = false);

std::array<uint8_t, 32> sha256(std::string_view data);

}  // namespace abx::daemon::codec
