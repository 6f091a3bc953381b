// Small encodings the wire needs: RFC 3339 times (base64 is common/base64.h,
// SHA-256 common/sha256.h).
#pragma once

#include <cstdint>
#include <string>

namespace abx::daemon::codec {

// 2026-11-29T15:17:51.123Z (UTC; millisecond precision when ms_precision).
std::string rfc3339(int64_t unix_sec, int64_t nsec = 0, bool ms_precision = false);

}  // namespace abx::daemon::codec
