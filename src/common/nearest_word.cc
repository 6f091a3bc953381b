#include "common/nearest_word.h"

#include <algorithm>
#include <vector>

namespace abx {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus a swap of two neighbours ("lsit").
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> nearest_word(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_edits = kMaxSuggestEdits + 1;
  for (const std::string& name : candidates) {
    const size_t edits = edit_distance(word, name);
    // A short word is far from everything: "x" is not "ls" mistyped.
    if (edits < best_edits && edits < std::max(name.size(), word.size()) / 2 + 1) {
      best = name;
      best_edits = edits;
    }
  }
  return best;
}

}  // namespace abx
