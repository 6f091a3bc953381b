// Keeping tool output within what a model's context can take.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace abx::mcp {

inline constexpr size_t kMaxOutputBytes = 20000;

// `text` when it fits in `limit` bytes; else its head and tail with a note of
// how many bytes were dropped between them. Cuts at UTF-8 character bounds.
std::string clip(std::string_view text, size_t limit = kMaxOutputBytes);

// `text` when it fits in `limit` bytes; else its first bytes (whole UTF-8
// characters) and a note of how many were left out. For one line of a listing.
std::string shorten(std::string_view text, size_t limit);

// A NUL byte or invalid UTF-8: not something to show a model as text.
bool looks_binary(std::string_view bytes);

}  // namespace abx::mcp
