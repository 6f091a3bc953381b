// Between a supervised command and its daemon: the agent reads what the
// command writes (on pipes of its own), keeps it in an OutputRing, and
// forwards it to the daemon's pipes. While a daemon holds the command, a
// daemon that reads slowly slows the command down, as a plain pipe would
// (the agent stops reading once a window of bytes waits). While none does,
// the command never waits: the daemon's pipes fill, then the ring keeps the
// newest output, and what no daemon will read any more is dropped oldest
// first (counted: dropped()).
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "agent/output_ring.h"
#include "common/unique_fd.h"

namespace abx::agent {

using runtime::OutputSlice;

class OutputRelay {
 public:
  // `*_source`: the read ends of the command's own stdout/stderr pipes;
  // `*_sink`: the write ends of the daemon's.
  OutputRelay(size_t capacity, UniqueFd out_source, UniqueFd out_sink, UniqueFd err_source,
              UniqueFd err_sink);

  // The fds it waits on now: sources while it reads, sinks while bytes wait.
  void add_pollfds(std::vector<pollfd>* fds) const;
  // One of its fds is ready (others are ignored).
  void handle(const pollfd& ready);
  // Takes what the sources hold right now and forwards what the sinks
  // accept, without waiting: before the command's exit is reported, so the
  // daemon has its last output first.
  void drain();
  void set_held(bool held) { held_ = held; }
  void ended(int wait_status) { wait_status_ = wait_status; }
  // Both sources at EOF and everything forwarded: the sinks are closed.
  bool finished() const;
  // What a later client reads; an ended command keeps only its tail.
  OutputSlice slice(uint64_t offset, size_t max) const;
  // The same as a reply of views into the ring (valid until it changes).
  proto::ReadReplyView slice_views(uint64_t offset, size_t max) const;
  bool has_ended() const { return wait_status_.has_value(); }
  // Ended, and what it wrote before is all in the ring: a source that still
  // holds bytes (the reading stopped at a follower's window) keeps the end
  // from a reader until they are in, so no end comes before the last byte.
  bool end_known() const;
  uint64_t end() const { return ring_.end(); }  // one past the newest byte kept
  // Where the command's follower got to (proto::Supervised::delivered).
  uint64_t delivered() const { return delivered_; }
  void set_delivered(uint64_t offset) { delivered_ = std::max(delivered_, offset); }
  // The connection following it with waiting reads (-1: none). While one
  // does, the command waits for it as for a held sink: no output is
  // dropped before the follower had it.
  int follower() const { return follower_; }
  void set_follower(int client) { follower_ = client; }
  // An ended command keeps only its newest `bytes`.
  void keep_tail(size_t bytes) {
    ring_.trim_to(bytes);
    tail_only_ = true;
  }
  bool tail_only() const { return tail_only_; }
  size_t kept() const { return ring_.kept(); }
  // Drops the oldest output until at most `bytes` are kept (what was not
  // forwarded yet counts as dropped).
  void shrink_to(size_t bytes) { ring_.trim_to(bytes); }
  uint64_t dropped() const { return dropped_; }

 private:
  uint64_t delivered_ = 0;
  int follower_ = -1;
  struct Stream {
    OutputStream name;
    UniqueFd source;
    UniqueFd sink;
    uint64_t cursor = 0;  // the next offset to forward (bytes of the other stream are skipped)
    bool teeable = true;  // false once tee refused the source (not a pipe)
  };
  bool wants_input(const Stream& stream) const;
  void read_source(Stream& stream);
  ssize_t tee_source(Stream& stream, char* buffer, size_t size);
  void forward(Stream& stream);

  OutputRing ring_;
  size_t window_;  // bytes that may wait for a holding daemon before reading stops
  std::array<Stream, 2> streams_;
  bool held_ = true;
  bool tail_only_ = false;
  std::optional<int> wait_status_;
  uint64_t dropped_ = 0;
};

// The agent's memory for all its commands' output: past `budget`, the
// largest rings give up their oldest half until the sum fits, so however many
// commands an API caller starts, the agent (whose memory the sandbox's limit
// does not bound) keeps at most that much.
template <class Relays>
void keep_within(Relays& relays, size_t budget) {
  size_t total = 0;
  for (const auto& [pid, relay] : relays) total += relay.kept();
  while (total > budget) {
    auto largest = relays.begin();
    for (auto it = relays.begin(); it != relays.end(); ++it)
      if (it->second.kept() > largest->second.kept()) largest = it;
    const size_t before = largest->second.kept();
    largest->second.shrink_to(before / 2);
    total -= before - largest->second.kept();
  }
}

}  // namespace abx::agent
