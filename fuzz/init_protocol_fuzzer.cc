// The messages between the daemon and a sandbox's init (agent/protocol):
// the daemon decodes replies, kept output and handed-over processes that
// come from inside the sandbox, and init decodes requests. Whatever decodes
// must encode and decode again to the same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/protocol.h"

namespace proto = abx::runtime::proto;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  proto::Request request;
  if (proto::decode(input, &request)) {
    proto::Request again;
    if (!proto::decode(proto::encode(request), &again) || again.label != request.label ||
        again.supervised != request.supervised || again.keep_stdin != request.keep_stdin ||
        again.timeout_ms != request.timeout_ms || again.ring_bytes != request.ring_bytes ||
        again.offset != request.offset || again.max_bytes != request.max_bytes ||
        again.input != request.input || again.cols != request.cols || again.rows != request.rows)
      std::abort();
  }
  proto::ReadReply read;
  if (proto::decode(input, &read)) {
    proto::ReadReply again;
    if (!proto::decode(proto::encode(read), &again) ||
        again.slice.chunks.size() != read.slice.chunks.size() || again.slice.end != read.slice.end)
      std::abort();
  }
  proto::Hello hello;
  if (proto::decode(input, &hello)) {
    proto::Hello again;
    if (!proto::decode(proto::encode(hello), &again) || again.token != hello.token ||
        again.version != hello.version)
      std::abort();
  }
  // What a TCP client's bytes become: frames, each within the bound.
  proto::FrameReader frames;
  frames.feed(input.data(), input.size());
  for (std::string one; frames.next(&one) == proto::FrameReader::Next::kFrame;)
    if (one.size() > proto::kMaxMessage) std::abort();
  proto::Reply reply;
  (void)proto::decode(input, &reply);
  proto::FileReply file_reply;
  if (proto::decode(input, &file_reply)) {
    proto::FileReply again;
    if (!proto::decode(proto::encode(file_reply), &again) || again.data != file_reply.data ||
        again.entries.size() != file_reply.entries.size() || again.written != file_reply.written)
      std::abort();
  }
  proto::Supervised process;
  if (proto::decode(input, &process)) {
    proto::Supervised again;
    if (!proto::decode(proto::encode(process), &again) || again.pid != process.pid ||
        again.label != process.label || again.has_stdin != process.has_stdin)
      std::abort();
  }
  return 0;
}
