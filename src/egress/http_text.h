// Small text helpers of HTTP/1.1 parsing shared by the proxy's first-bytes
// reader and its request rewriter.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace abx::egress {

// Header names compare case-insensitively.
inline bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Optional whitespace around a header value.
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace abx::egress
