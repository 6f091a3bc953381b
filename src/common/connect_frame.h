// Connect protocol envelopes: [flags:u8][length:u32 big-endian][payload].
// Used by server streams (daemon) and their readers (CLI). spec/e2b-protocol.md §7.2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace abx::connect {

inline constexpr uint8_t kFlagEndStream = 0x02;
inline constexpr uint8_t kFlagCompressed = 0x01;
inline constexpr size_t kMaxFrameBytes = 16u << 20;

struct Frame {
  uint8_t flags = 0;
  std::string payload;
  bool end_stream() const { return (flags & kFlagEndStream) != 0; }
};

std::string encode(std::string_view payload, uint8_t flags = 0);

// Incremental decoder: feed bytes as they arrive, take whole frames out.
class FrameReader {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // A whole frame, or nullopt when more bytes are needed. Sets `error` on a
  // frame larger than kMaxFrameBytes.
  std::optional<Frame> next(std::string* error = nullptr);
  bool empty() const { return buffer_.empty(); }

 private:
  std::string buffer_;
};

}  // namespace abx::connect
