// Percent-decoding and query strings (Boost 1.74 has no Boost.URL).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace abx::daemon::url {

// "%2F" → "/"; with `plus_is_space`, "+" → " " (form encoding, used in queries).
std::string percent_decode(std::string_view text, bool plus_is_space);

// "a=1&b=x%20y" → {a:1, b:"x y"}; a repeated key keeps its last value.
std::map<std::string, std::string> parse_query(std::string_view query);

// Splits "/files?path=x" into its decoded path and its raw query.
void split_target(std::string_view target, std::string* path, std::string* query);

}  // namespace abx::daemon::url
