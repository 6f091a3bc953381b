#include "agent/output_ring.h"

#include <algorithm>

namespace abx::agent {

void OutputRing::append(OutputStream stream, std::string_view bytes) {
  while (!bytes.empty()) {
    if (runs_.empty() || runs_.back().stream != stream || runs_.back().bytes.size() >= kRunBytes) {
      runs_.push_back({stream, end_, {}});
      // A command that writes a lot fills its runs whole: one allocation
      // each rather than a string doubling its way up. Small writes (an
      // idle or chatty command) grow theirs as they come.
      if (bytes.size() >= kBulkWrite) runs_.back().bytes.reserve(kRunBytes);
    }
    OutputChunk& run = runs_.back();
    const size_t take = std::min(bytes.size(), kRunBytes - run.bytes.size());
    run.bytes.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    end_ += take;
    kept_ += take;
  }
  trim_to(capacity_);
}

void OutputRing::trim_to(size_t bytes) {
  while (kept_ > bytes) {
    OutputChunk& oldest = runs_.front();
    const size_t drop = std::min(kept_ - bytes, oldest.bytes.size());
    if (drop == oldest.bytes.size()) {
      kept_ -= drop;
      runs_.pop_front();
      continue;
    }
    oldest.bytes.erase(0, drop);
    oldest.offset += drop;
    kept_ -= drop;
  }
}

std::vector<proto::ChunkView> OutputRing::views(uint64_t offset, size_t max) const {
  std::vector<proto::ChunkView> out;
  offset = std::max(offset, start());
  for (const OutputChunk& run : runs_) {
    if (max == 0) break;
    const uint64_t run_end = run.offset + run.bytes.size();
    if (run_end <= offset) continue;
    const size_t skip = offset > run.offset ? static_cast<size_t>(offset - run.offset) : 0;
    const size_t take = std::min(max, run.bytes.size() - skip);
    out.push_back({run.stream, run.offset + skip, std::string_view(run.bytes).substr(skip, take)});
    max -= take;
  }
  return out;
}

std::vector<OutputChunk> OutputRing::read(uint64_t offset, size_t max) const {
  std::vector<OutputChunk> out;
  for (const auto& view : views(offset, max))
    out.push_back({view.stream, view.offset, std::string(view.bytes)});
  return out;
}

std::string_view OutputRing::next_of(OutputStream stream, uint64_t offset, uint64_t* at) const {
  // Runs are in offset order: skip those that end before `offset`.
  auto it = std::partition_point(runs_.begin(), runs_.end(), [&](const OutputChunk& run) {
    return run.offset + run.bytes.size() <= offset;
  });
  for (; it != runs_.end(); ++it) {
    if (it->stream != stream) continue;
    const size_t skip = offset > it->offset ? static_cast<size_t>(offset - it->offset) : 0;
    *at = it->offset + skip;
    return std::string_view(it->bytes).substr(skip);
  }
  *at = end_;
  return {};
}

}  // namespace abx::agent
