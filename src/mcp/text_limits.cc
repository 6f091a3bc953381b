#include "mcp/text_limits.h"

namespace abx::mcp {
namespace {

bool is_continuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// Moves `pos` back to the start of the UTF-8 character it falls in.
size_t char_start(std::string_view text, size_t pos) {
  while (pos > 0 && pos < text.size() && is_continuation(text[pos])) --pos;
  return pos;
}

// The length of the UTF-8 sequence `lead` starts, 0 when it cannot start one.
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

std::string clip(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  const size_t head_end = char_start(text, limit / 2);
  const size_t tail_start = char_start(text, text.size() - limit / 2);
  const size_t dropped = tail_start - head_end;
  return std::string(text.substr(0, head_end)) + "\n[... " + std::to_string(dropped) +
         " bytes dropped: the output was " + std::to_string(text.size()) +
         " bytes; redirect it to a file and read parts of it ...]\n" +
         std::string(text.substr(tail_start));
}

std::string shorten(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  const size_t end = char_start(text, limit);
  return std::string(text.substr(0, end)) + "[... " + std::to_string(text.size() - end) +
         " more bytes]";
}

bool looks_binary(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead == 0) return true;
    const size_t length = sequence_length(lead);
    if (length == 0 || i + length > bytes.size()) return true;
    for (size_t k = 1; k < length; ++k) {
      if (!is_continuation(bytes[i + k])) return true;
    }
    i += length;
  }
  return false;
}

}  // namespace abx::mcp
