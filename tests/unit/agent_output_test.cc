// The agent's output ring and relay (src/agent/output_*), on real pipes,
// and the kRead messages that carry what they keep.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include "agent/output_relay.h"
#include "agent/output_ring.h"
#include "agent/protocol.h"

namespace abx::agent {
namespace {

std::string joined(const std::vector<OutputChunk>& chunks, OutputStream only) {
  std::string out;
  for (const auto& chunk : chunks)
    if (chunk.stream == only) out += chunk.bytes;
  return out;
}

TEST(OutputRing, KeepsOrderAndOffsetsAndDropsTheOldest) {
  OutputRing ring(10);
  ring.append(OutputStream::kStdout, "abc");
  ring.append(OutputStream::kStderr, "DE");
  ring.append(OutputStream::kStdout, "fg");
  auto all = ring.read(0, 100);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].offset, 3u);
  EXPECT_EQ(all[1].bytes, "DE");
  EXPECT_EQ(joined(all, OutputStream::kStdout), "abcfg");

  ring.append(OutputStream::kStdout, "hijkl");  // 12 written, 10 kept
  EXPECT_EQ(ring.start(), 2u);
  EXPECT_EQ(ring.end(), 12u);
  auto kept = ring.read(0, 100);  // an offset already dropped reads from start()
  EXPECT_EQ(kept.front().offset, 2u);
  EXPECT_EQ(joined(kept, OutputStream::kStdout), "cfghijkl");
  auto from_middle = ring.read(4, 3);
  ASSERT_EQ(from_middle.size(), 2u);
  EXPECT_EQ(from_middle[0].bytes, "E");
  EXPECT_EQ(from_middle[1].bytes, "fg");
  EXPECT_TRUE(ring.read(12, 100).empty());
}

TEST(OutputRing, NextOfSkipsTheOtherStream) {
  OutputRing ring(1 << 20);
  ring.append(OutputStream::kStdout, "out1");
  ring.append(OutputStream::kStderr, "err");
  ring.append(OutputStream::kStdout, "out2");
  uint64_t at = 0;
  EXPECT_EQ(ring.next_of(OutputStream::kStderr, 0, &at), "err");
  EXPECT_EQ(at, 4u);
  EXPECT_EQ(ring.next_of(OutputStream::kStdout, 4, &at), "out2");
  EXPECT_EQ(at, 7u);
  EXPECT_EQ(ring.next_of(OutputStream::kStderr, 7, &at), "");
  EXPECT_EQ(at, ring.end());
}

struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
  UniqueFd read, write;
};

std::string read_all(int fd) {
  std::string out;
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

std::string read_all_available(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  std::string out = read_all(fd);
  (void)::fcntl(fd, F_SETFL, flags);
  return out;
}

TEST(OutputRelay, ForwardsEachStreamKeepsItAndEndsWithItsSources) {
  Pipe out, err, out_sink, err_sink;
  OutputRelay relay(1 << 20, std::move(out.read), std::move(out_sink.write), std::move(err.read),
                    std::move(err_sink.write));
  ASSERT_EQ(::write(out.write.get(), "hello\n", 6), 6);
  ASSERT_EQ(::write(err.write.get(), "oops\n", 5), 5);
  relay.drain();
  out.write.reset();
  err.write.reset();
  relay.drain();
  EXPECT_TRUE(relay.finished());
  EXPECT_EQ(read_all(out_sink.read.get()), "hello\n");  // EOF: the relay closed its sink
  EXPECT_EQ(read_all(err_sink.read.get()), "oops\n");
  relay.ended(7 << 8);
  const OutputSlice slice = relay.slice(0, 1024);
  EXPECT_TRUE(slice.ended);
  EXPECT_EQ(slice.wait_status, 7 << 8);
  EXPECT_EQ(joined(slice.chunks, OutputStream::kStdout), "hello\n");
  EXPECT_EQ(joined(slice.chunks, OutputStream::kStderr), "oops\n");
}

// With no daemon holding the command, its writes never wait: the relay
// reads on though the daemon's pipe is full, keeps the newest in its ring,
// and forwards what is left once the pipe drains, counting what it dropped.
TEST(OutputRelay, UnheldNeverBlocksTheWriterAndCountsWhatItDropped) {
  Pipe out, err, out_sink, err_sink;
  ASSERT_EQ(::fcntl(out.write.get(), F_SETFL, O_NONBLOCK), 0);
  constexpr size_t kRing = 256 * 1024;
  OutputRelay relay(kRing, std::move(out.read), std::move(out_sink.write), std::move(err.read),
                    std::move(err_sink.write));
  relay.set_held(false);
  const std::string block(16 * 1024, 'x');
  size_t written = 0;
  for (int i = 0; i < 64; ++i) {  // 1 MiB: far more than the pipes and the ring hold
    const ssize_t n = ::write(out.write.get(), block.data(), block.size());
    ASSERT_EQ(n, static_cast<ssize_t>(block.size())) << "the writer waited at " << written;
    written += block.size();
    relay.drain();
  }
  out.write.reset();
  err.write.reset();
  relay.drain();
  const OutputSlice slice = relay.slice(0, 1 << 20);
  EXPECT_EQ(slice.end, written);
  EXPECT_EQ(slice.start, written - kRing);
  std::string forwarded;
  while (!relay.finished()) {
    forwarded += read_all_available(out_sink.read.get());
    relay.drain();
  }
  forwarded += read_all(out_sink.read.get());
  EXPECT_EQ(forwarded.size() + relay.dropped(), written);
  EXPECT_GT(relay.dropped(), 0u);
}

TEST(AgentProtocol, ReadRequestAndReplyRoundTrip) {
  proto::Request request{proto::RequestType::kRead, {}, 42, 0};
  request.offset = 1234;
  request.max_bytes = proto::kMaxReadBytes;
  proto::Request decoded;
  ASSERT_TRUE(proto::decode(proto::encode(request), &decoded));
  EXPECT_EQ(decoded.pid, 42);
  EXPECT_EQ(decoded.offset, 1234u);
  request.max_bytes = proto::kMaxReadBytes + 1;
  EXPECT_FALSE(proto::decode(proto::encode(request), &decoded));
  EXPECT_EQ(decoded.wait_ms, 0u);  // absent: what an older daemon sends
  request.max_bytes = 16;
  request.wait_ms = proto::kMaxReadWaitMs;
  ASSERT_TRUE(proto::decode(proto::encode(request), &decoded));
  EXPECT_EQ(decoded.wait_ms, proto::kMaxReadWaitMs);
  request.wait_ms = proto::kMaxReadWaitMs + 1;
  EXPECT_FALSE(proto::decode(proto::encode(request), &decoded));
  std::string zero_wait = proto::encode(request);  // a wait of 0 is sent as none
  zero_wait.replace(zero_wait.size() - 4, 4, std::string(4, '\0'));
  EXPECT_FALSE(proto::decode(zero_wait, &decoded));

  proto::ReadReply reply;
  reply.slice = {10, 20, {{OutputStream::kStdout, 10, "abc"}, {OutputStream::kStderr, 13, "d"}}};
  reply.slice.ended = true;
  reply.slice.wait_status = 9;
  proto::ReadReply again;
  ASSERT_TRUE(proto::decode(proto::encode(reply), &again));
  EXPECT_EQ(again.slice.chunks.size(), 2u);
  EXPECT_EQ(again.slice.chunks[1].bytes, "d");
  EXPECT_EQ(again.slice.wait_status, 9);
  reply.slice.chunks[1].offset = 11;  // overlaps the chunk before: from a hostile agent
  EXPECT_FALSE(proto::decode(proto::encode(reply), &again));
  proto::Reply plain;
  EXPECT_FALSE(proto::decode(proto::encode(plain), &again));
}

}  // namespace
}  // namespace abx::agent

namespace abx::agent {
namespace {

TEST(OutputRelay, AllRingsTogetherStayWithinTheAgentsBudget) {
  std::map<int, OutputRelay> relays;
  std::vector<UniqueFd> writers;
  const std::string block(64 * 1024, 'y');
  for (int i = 0; i < 3; ++i) {
    Pipe out, err, out_sink, err_sink;
    OutputRelay& relay =
        relays
            .emplace(i, OutputRelay(1 << 20, std::move(out.read), std::move(out_sink.write),
                                    std::move(err.read), std::move(err_sink.write)))
            .first->second;
    relay.set_held(false);
    for (int k = 0; k < 4 * (i + 1); ++k) {  // 256, 512, 768 KiB
      ASSERT_EQ(::write(out.write.get(), block.data(), block.size()),
                static_cast<ssize_t>(block.size()));
      relay.drain();
    }
    writers.push_back(std::move(out.write));
  }
  keep_within(relays, 1 << 20);
  size_t total = 0;
  for (const auto& [pid, relay] : relays) total += relay.kept();
  EXPECT_LE(total, size_t{1} << 20);
  EXPECT_EQ(relays.at(0).kept(), 256u * 1024);           // the smallest keeps all it had
  EXPECT_EQ(relays.at(2).slice(0, 1).end, 768u * 1024);  // offsets still count every byte
}

}  // namespace
}  // namespace abx::agent
