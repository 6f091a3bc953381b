// Base64 (standard alphabet, padded): proto3-JSON carries bytes this way.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace abx::base64 {

// `pad` false drops the trailing '=' (envd's file URL signatures want that).
std::string encode(std::string_view bytes, bool pad = true);
// The same, appended to `out` (no copy of a large encoding).
void encode_append(std::string* out, std::string_view bytes, bool pad = true);
// Standard or URL-safe alphabet, padding optional; nullopt on a character
// outside them or a stray final character.
std::optional<std::string> decode(std::string_view text);

}  // namespace abx::base64
