// How many client connections the daemon holds, and which one gives way when
// a new one arrives at the limit. Each connection costs a file descriptor; a
// peer that opens thousands and sends nothing must not starve everyone else,
// and `/health` must stay answerable while the daemon is saturated.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>

namespace abx::daemon::http {

class ConnectionTable {
 public:
  enum class Kind {
    regular,      // serves any request, keep-alive
    health_only,  // over the limit: answers one GET /health, 503 to anything else
  };

  // A connection's place in the table, given back when it is destroyed.
  class Slot {
   public:
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    Kind kind() const { return kind_; }
    // Waiting between requests: the table may close this connection (by
    // calling `close`, from the thread admitting another) to make room.
    void set_idle(std::function<void()> close);
    // A request began. False when the table already gave this slot away: the
    // connection must close.
    bool set_busy();

   private:
    friend class ConnectionTable;
    Slot(ConnectionTable& table, Kind kind) : table_(table), kind_(kind) {}

    ConnectionTable& table_;
    const Kind kind_;
    bool idle_ = false;     // guarded by table_.mutex_
    bool evicted_ = false;  // guarded by table_.mutex_
    std::list<Slot*>::iterator idle_position_;
    std::function<void()> close_;
  };

  // `limit` regular connections, and `overflow` more that may only ask for /health.
  ConnectionTable(size_t limit, size_t overflow) : limit_(limit), overflow_(overflow) {}

  // A regular slot while under the limit, or in place of the connection idle
  // longest (which is closed); otherwise a health-only one while the overflow
  // has room; otherwise nothing (close the new connection at once).
  // `last_fd`: the connection came in on the daemon's spare descriptor, so it
  // is health-only whatever the count.
  std::unique_ptr<Slot> admit(bool last_fd = false);

  // Closes the connection idle longest, if any, to give back its descriptor.
  bool evict_longest_idle();

  size_t limit() const { return limit_; }
  size_t open() const;

 private:
  // Takes the oldest idle slot out of the table; its close callback, to be
  // called without the lock held, or an empty one when nothing is idle.
  std::function<void()> take_longest_idle_locked();
  void release(Slot& slot);

  const size_t limit_;
  const size_t overflow_;
  mutable std::mutex mutex_;
  size_t regular_ = 0;
  size_t health_only_ = 0;
  std::list<Slot*> idle_;  // longest idle first
};

}  // namespace abx::daemon::http
