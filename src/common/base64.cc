#include "common/base64.h"

#include <array>
#include <cstdint>

namespace abx::base64 {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_decode_table() {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  // proto3 JSON parsers accept the URL-safe alphabet too.
  table['-'] = 62;
  table['_'] = 63;
  return table;
}

}  // namespace

std::string encode(std::string_view bytes, bool pad) {
  std::string out;
  encode_append(&out, bytes, pad);
  return out;
}

void encode_append(std::string* appended, std::string_view bytes, bool pad) {
  std::string& out = *appended;
  const size_t whole = bytes.size() / 3;
  const size_t at = out.size();
  out.reserve(at + (bytes.size() + 2) / 3 * 4);
  out.resize(at + whole * 4);
  char* dst = out.data() + at;
  for (size_t i = 0; i < whole * 3; i += 3) {
    const uint32_t n = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                       uint32_t{static_cast<uint8_t>(bytes[i + 2])};
    *dst++ = kAlphabet[(n >> 18) & 63];
    *dst++ = kAlphabet[(n >> 12) & 63];
    *dst++ = kAlphabet[(n >> 6) & 63];
    *dst++ = kAlphabet[n & 63];
  }
  const size_t i = whole * 3;
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) n |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    if (rest == 2) out.push_back(kAlphabet[(n >> 6) & 63]);
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
}

// Four characters make three bytes: whole groups first, written in place
// (process output streams through here, megabytes a second), then the tail.
std::optional<std::string> decode(std::string_view text) {
  static constexpr auto kTable = make_decode_table();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;  // one stray character cannot encode a byte
  std::string out(text.size() / 4 * 3 + (text.size() % 4 == 0 ? 0 : text.size() % 4 - 1), '\0');
  auto value = [&](char c) { return kTable[static_cast<unsigned char>(c)]; };
  char* dst = out.data();
  size_t i = 0;
  for (; i + 4 <= text.size(); i += 4) {
    const int8_t a = value(text[i]), b = value(text[i + 1]), c = value(text[i + 2]),
                 d = value(text[i + 3]);
    if ((a | b | c | d) < 0) return std::nullopt;
    const uint32_t n = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    *dst++ = static_cast<char>(n >> 16);
    *dst++ = static_cast<char>((n >> 8) & 0xff);
    *dst++ = static_cast<char>(n & 0xff);
  }
  uint32_t acc = 0;
  int bits = 0;
  for (; i < text.size(); ++i) {
    const int8_t v = value(text[i]);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *dst++ = static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace abx::base64
