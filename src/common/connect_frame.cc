#include "common/connect_frame.h"

namespace abx::connect {

std::string encode(std::string_view payload, uint8_t flags) {
  std::string out;
  out.reserve(payload.size() + 5);
  const auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(payload);
  return out;
}

std::optional<Frame> FrameReader::next(std::string* error) {
  if (buffer_.size() < 5) return std::nullopt;
  uint32_t n = 0;
  for (size_t i = 1; i <= 4; ++i) n = (n << 8) | static_cast<uint8_t>(buffer_[i]);
  if (n > kMaxFrameBytes) {
    if (error) *error = "connect frame of " + std::to_string(n) + " bytes exceeds the limit";
    return std::nullopt;
  }
  if (buffer_.size() < 5 + static_cast<size_t>(n)) return std::nullopt;
  Frame f{static_cast<uint8_t>(buffer_[0]), buffer_.substr(5, n)};
  buffer_.erase(0, 5 + n);
  return f;
}

}  // namespace abx::connect
