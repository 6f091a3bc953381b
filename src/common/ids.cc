#include "common/ids.h"

#include <sys/random.h>

#include <stdexcept>
#include <vector>

namespace abx::ids {
namespace {

std::vector<unsigned char> random_bytes(size_t n) {
  std::vector<unsigned char> out(n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(out.data() + got, n - got, 0);
    if (r < 0) throw std::runtime_error("getrandom failed");
    got += static_cast<size_t>(r);
  }
  return out;
}

}  // namespace

std::string random_hex(size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : random_bytes(bytes)) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

std::string sandbox_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out = "i";
  // 252 = 7 * 36: rejecting bytes above it keeps every character equally likely.
  while (out.size() < 21) {
    for (unsigned char b : random_bytes(32)) {
      if (b < 252 && out.size() < 21) out.push_back(kAlphabet[b % 36]);
    }
  }
  return out;
}

std::string api_key() { return "e2b_" + random_hex(20); }

bool is_valid_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

}  // namespace abx::ids
