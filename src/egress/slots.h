// Who may hold the egress proxy's connections. The table is shared by every
// team's sandboxes, so without shares one team's idle connections could take
// every slot and cut every other team's web egress (issue 31, item 6). A
// connection is admitted when its sandbox and its team are under their caps
// and the table has room; when the table is full, a team holding fewer
// connections than the team holding the most takes a slot from that team
// (its least recently active connection is evicted), so a team under its fair
// share always gets one. Pure bookkeeping: the proxy cuts what it is told to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "egress/stream.h"

namespace abx::egress {

// Milliseconds of some monotonic clock when a connection last moved a byte.
using ActivityStamp = std::shared_ptr<std::atomic<int64_t>>;

// Now, as ActivityStamp counts it.
inline int64_t activity_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

// Forwards to `inner` and stamps whenever a byte moves: what "idle" means
// when the table picks a connection to evict.
class StampedStream final : public Stream {
 public:
  StampedStream(Stream& inner, ActivityStamp stamp) : inner_(inner), stamp_(std::move(stamp)) {}
  IoResult read(char* buffer, size_t size) override { return stamped(inner_.read(buffer, size)); }
  IoResult write(const char* data, size_t size) override {
    return stamped(inner_.write(data, size));
  }
  void shutdown_write() override { inner_.shutdown_write(); }
  int fd() const override { return inner_.fd(); }
  short read_wants() const override { return inner_.read_wants(); }
  short write_wants() const override { return inner_.write_wants(); }
  bool buffered() const override { return inner_.buffered(); }

 private:
  IoResult stamped(IoResult result) {
    if (result.status == Io::kOk && result.bytes > 0)
      stamp_->store(activity_now(), std::memory_order_relaxed);
    return result;
  }
  Stream& inner_;
  ActivityStamp stamp_;
};

class SlotTable {
 public:
  SlotTable(size_t global, size_t per_source) : global_(global), per_source_(per_source) {}

  struct Admission {
    bool admitted = false;
    std::optional<uint64_t> evict;  // admitted by taking this connection's slot
    std::string refusal;            // why not, when not admitted
  };
  // Whether a new connection of `team` from `source` may open; `team_cap` is
  // the team's share (0: the whole table). Changes nothing: add() it after.
  Admission admit(uint32_t source, const std::string& team, size_t team_cap) const;
  void add(uint64_t id, uint32_t source, const std::string& team, ActivityStamp activity);
  void remove(uint64_t id);  // no-op when already gone (an evicted one, say)

  size_t size() const { return entries_.size(); }
  size_t held_by_team(const std::string& team) const;

 private:
  struct Entry {
    uint32_t source = 0;
    std::string team;
    ActivityStamp activity;
  };
  std::optional<uint64_t> idlest_of(const std::string& team) const;

  size_t global_, per_source_;
  std::map<uint64_t, Entry> entries_;
  std::map<uint32_t, size_t> per_source_count_;
  std::map<std::string, size_t> per_team_count_;
};

}  // namespace abx::egress
