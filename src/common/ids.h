// Random identifiers: sandbox ids ([a-z0-9], E2B's host routing splits on '-')
// and API keys (e2b_ + hex, the format the E2B SDKs check client-side).
// spec/e2b-protocol.md §2.3, §4.
#pragma once

#include <string>
#include <string_view>

namespace abx::ids {

std::string sandbox_id();  // "i" + 20 chars of [a-z0-9]
std::string api_key();     // "e2b_" + 40 hex
std::string random_hex(size_t bytes);
// [a-z0-9]{1,64}: what every sandbox id is, and all a URL host label or path may carry.
bool is_valid_sandbox_id(std::string_view id);

}  // namespace abx::ids
