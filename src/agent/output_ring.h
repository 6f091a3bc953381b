// A supervised command's output as its agent keeps it: the newest bytes it
// wrote to stdout and stderr, in the order they came, each run tagged with
// its stream. Offsets count every byte since the command's first, so a
// client that asks from where it stopped gets exactly what it missed (or
// learns, from start(), how much was dropped). Memory grows as output comes,
// up to the capacity: an idle command costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string_view>

#include "agent/protocol.h"
#include "runtime/runtime.h"

namespace abx::agent {

using runtime::OutputChunk;
using runtime::OutputStream;

class OutputRing {
 public:
  explicit OutputRing(size_t capacity) : capacity_(capacity) {}

  void append(OutputStream stream, std::string_view bytes);
  // Drops the oldest bytes until at most `bytes` are kept.
  void trim_to(size_t bytes);

  uint64_t start() const { return end_ - kept_; }
  uint64_t end() const { return end_; }
  size_t kept() const { return kept_; }

  // Chunks from `offset` (from start() if that is older), at most `max`
  // bytes in all.
  std::vector<OutputChunk> read(uint64_t offset, size_t max) const;
  // The same as views of the kept bytes, valid until the ring changes.
  std::vector<proto::ChunkView> views(uint64_t offset, size_t max) const;
  // The first run of `stream` that ends after `offset`, from `offset` on
  // (empty when there is none yet). Where the relay forwards from.
  std::string_view next_of(OutputStream stream, uint64_t offset, uint64_t* at) const;

 private:
  // Runs are merged up to this size, so a command writing small lines costs
  // few allocations, and dropping the oldest never moves much.
  static constexpr size_t kRunBytes = 64 * 1024;
  static constexpr size_t kBulkWrite = 4096;
  size_t capacity_;
  std::deque<OutputChunk> runs_;
  uint64_t end_ = 0;
  size_t kept_ = 0;
};

}  // namespace abx::agent
