// What to do next, added to errors a user cannot act on alone.
#pragma once

#include <string>

namespace abx::cli {

// `message` with a hint where one helps: a sandbox that is not found was
// killed or reached its timeout (what E2B's SDK says), and `abx list` shows
// the ones still running.
std::string with_hint(const std::string& message);

}  // namespace abx::cli
