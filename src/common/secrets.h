// Comparing secrets (keys, tokens, signatures) without leaking through timing
// how much of a guess was right.
#pragma once

#include <string_view>

namespace abx {

// True when a == b; the time taken depends on neither value (both are hashed
// to fixed-size digests, which are compared with CRYPTO_memcmp).
bool secrets_equal(std::string_view a, std::string_view b);

}  // namespace abx
