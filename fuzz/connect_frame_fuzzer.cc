// Connect envelopes ([flags][u32 length][payload]) read by FrameReader, fed
// in pieces as a socket would deliver them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/connect_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the piece size, so frames are split at every offset.
  const size_t piece = static_cast<size_t>(data[0] % 16) + 1;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  abx::connect::FrameReader reader;
  for (size_t at = 0; at < input.size(); at += piece) {
    reader.feed(input.substr(at, piece));
    for (;;) {
      std::string error;
      auto frame = reader.next(&error);
      if (!error.empty() || !frame) break;
      // What the reader took out, encoded again, must read back the same.
      abx::connect::FrameReader again;
      again.feed(abx::connect::encode(frame->payload, frame->flags));
      auto round = again.next();
      if (!round || round->payload != frame->payload || round->flags != frame->flags)
        __builtin_trap();
    }
  }
  return 0;
}
