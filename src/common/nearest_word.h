// "did you mean X?": the candidate a mistyped word most likely meant (the
// CLI's commands and flags, the daemon's template names).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abx {

inline constexpr size_t kMaxSuggestEdits = 2;

// Edits (insert, delete, replace, swap of neighbours) between a and b.
size_t edit_distance(std::string_view a, std::string_view b);

// The nearest of `candidates` within kMaxSuggestEdits edits (and under half
// the longer word's length), or nullopt.
std::optional<std::string> nearest_word(std::string_view word,
                                        const std::vector<std::string>& candidates);

}  // namespace abx
