// How many client connections the daemon holds, and which one gives way when
// a new one arrives at a limit. Each connection costs a file descriptor; a
// peer that opens thousands and sends nothing, or a few bytes of a request
// head, must not starve everyone else, and `/health` and callers with a
// credential must stay served while the daemon is saturated.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace abx::daemon::http {

struct ConnectionLimits {
  size_t connections = 4096;  // regular connections held at once
  size_t per_source = 1024;   // regular connections one client address may hold
  // Of `connections`, how many only requests that authenticated (or ask for
  // /health) may use: requests without a credential hold at most
  // `connections - reserve` at once.
  size_t reserve = 0;
  size_t overflow = 32;  // more connections that may only ask for /health
};

class ConnectionTable {
 public:
  enum class Kind {
    regular,      // serves any request, keep-alive
    health_only,  // over the limit: answers one GET /health, 503 to anything else
  };

  // What a request whose head has arrived may do.
  enum class Admission {
    serve,         // anything
    reserve_only,  // only if it authenticates or asks for /health (503 otherwise)
    closed,        // the table gave this connection's place away: close it
  };

  // A connection's place in the table, given back when it is destroyed.
  class Slot {
   public:
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    Kind kind() const { return kind_; }
    // Reading a request head (a new connection, or bytes of a next request
    // arrived): the table may close it (by calling `close`, from the thread
    // admitting another) to make room, before any idle one, oldest first.
    void set_reading_head(std::function<void()> close);
    // Waiting between requests: may be closed to make room, longest idle first.
    void set_idle(std::function<void()> close);
    // A request's head is complete.
    Admission set_busy();
    // The request under way proved a credential: it does not count against
    // the connections kept in reserve.
    void set_authenticated();
    // The table gave this connection's place away.
    bool evicted() const;

   private:
    friend class ConnectionTable;
    enum class State { head, idle, busy };
    Slot(ConnectionTable& table, Kind kind, std::string source)
        : table_(table), kind_(kind), source_(std::move(source)) {}

    ConnectionTable& table_;
    const Kind kind_;
    const std::string source_;
    // All guarded by table_.mutex_.
    State state_ = State::head;
    bool listed_ = false;  // in table_.heads_ or table_.idle_
    bool evicted_ = false;
    bool anonymous_busy_ = false;  // counted in table_.anonymous_busy_
    std::list<Slot*>::iterator position_;
    std::function<void()> close_;
  };

  explicit ConnectionTable(ConnectionLimits limits);

  // A regular slot while under the limits, or in place of a connection that
  // is reading its head or idle (which is closed: the source's own first when
  // it is at its per-source limit); otherwise a health-only one while the
  // overflow has room; otherwise nothing (close the new connection at once).
  // `source`: the client's address. `last_fd`: the connection came in on the
  // daemon's spare descriptor, so it is health-only whatever the count.
  std::unique_ptr<Slot> admit(const std::string& source, bool last_fd = false);

  // Closes the connection that has been reading its head longest, or else the
  // one idle longest, to give back its descriptor. False when there is none.
  bool evict_one();

  size_t limit() const { return limits_.connections; }
  const ConnectionLimits& limits() const { return limits_; }
  size_t open() const;

 private:
  std::list<Slot*>& list_of(Slot::State state) {
    return state == Slot::State::head ? heads_ : idle_;
  }
  void wait_locked(Slot& slot, Slot::State state, std::function<void()> close);
  void unlist_locked(Slot& slot);
  void leave_busy_locked(Slot& slot);
  // Takes a regular slot that reads its head or is idle (of `source` only,
  // unless null) out of the table; its close callback, to be called without
  // the lock held, or an empty one when there is none.
  std::function<void()> take_victim_locked(const std::string* source);
  void release(Slot& slot);

  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  size_t regular_ = 0;
  size_t health_only_ = 0;
  size_t anonymous_busy_ = 0;                 // regular requests under way without a credential
  std::map<std::string, size_t> per_source_;  // regular connections by address
  std::list<Slot*> heads_;                    // regular, reading a head; oldest first
  std::list<Slot*> idle_;                     // regular, between requests; longest idle first
  std::list<Slot*> health_heads_;             // health-only, reading a head; oldest first
};

}  // namespace abx::daemon::http
