// Base64 (standard alphabet, padded): proto3-JSON carries bytes this way.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace abx::base64 {

std::string encode(std::string_view bytes);
// nullopt on a character outside the alphabet; padding is optional.
std::optional<std::string> decode(std::string_view text);

}  // namespace abx::base64
