#include "daemon/connection_table.h"

#include <utility>

namespace abx::daemon::http {

ConnectionTable::Slot::~Slot() { table_.release(*this); }

void ConnectionTable::Slot::set_reading_head(std::function<void()> close) {
  const std::lock_guard lock(table_.mutex_);
  table_.wait_locked(*this, State::head, std::move(close));
}

void ConnectionTable::Slot::set_idle(std::function<void()> close) {
  const std::lock_guard lock(table_.mutex_);
  table_.wait_locked(*this, State::idle, std::move(close));
}

ConnectionTable::Admission ConnectionTable::Slot::set_busy() {
  const std::lock_guard lock(table_.mutex_);
  if (evicted_) return Admission::closed;
  table_.unlist_locked(*this);
  if (state_ == State::busy) return Admission::serve;
  state_ = State::busy;
  if (kind_ != Kind::regular) return Admission::serve;
  anonymous_busy_ = true;
  ++table_.anonymous_busy_;
  const auto& limits = table_.limits_;
  const size_t anonymous_room =
      limits.connections > limits.reserve ? limits.connections - limits.reserve : 0;
  return table_.anonymous_busy_ > anonymous_room ? Admission::reserve_only : Admission::serve;
}

void ConnectionTable::Slot::set_authenticated() {
  const std::lock_guard lock(table_.mutex_);
  if (!anonymous_busy_) return;
  anonymous_busy_ = false;
  --table_.anonymous_busy_;
}

bool ConnectionTable::Slot::evicted() const {
  const std::lock_guard lock(table_.mutex_);
  return evicted_;
}

ConnectionTable::ConnectionTable(ConnectionLimits limits) : limits_(limits) {}

std::unique_ptr<ConnectionTable::Slot> ConnectionTable::admit(const std::string& source,
                                                              bool last_fd) {
  std::function<void()> close_source;
  std::function<void()> close_any;
  std::function<void()> close_health;
  std::unique_ptr<Slot> slot;
  {
    const std::lock_guard lock(mutex_);
    if (!last_fd) {
      // At its own limit, a source gives way to itself: its partial heads
      // and idle connections go first, never another source's.
      const auto mine = [&] {
        const auto it = per_source_.find(source);
        return it == per_source_.end() ? size_t{0} : it->second;
      };
      if (mine() >= limits_.per_source) close_source = take_victim_locked(&source);
      if (mine() < limits_.per_source) {
        if (regular_ >= limits_.connections) close_any = take_victim_locked(nullptr);
        if (regular_ < limits_.connections) {
          ++regular_;
          ++per_source_[source];
          slot.reset(new Slot(*this, Kind::regular, source));
        }
      }
    }
    if (!slot) {
      if (health_only_ >= limits_.overflow && !health_heads_.empty()) {
        Slot* oldest = health_heads_.front();
        unlist_locked(*oldest);
        oldest->evicted_ = true;
        --health_only_;
        close_health = std::exchange(oldest->close_, nullptr);
      }
      if (health_only_ < limits_.overflow) {
        ++health_only_;
        slot.reset(new Slot(*this, Kind::health_only, source));
      }
    }
  }
  for (auto* close : {&close_source, &close_any, &close_health}) {
    if (*close) (*close)();
  }
  return slot;
}

bool ConnectionTable::evict_one() {
  std::function<void()> close;
  {
    const std::lock_guard lock(mutex_);
    close = take_victim_locked(nullptr);
  }
  if (!close) return false;
  close();
  return true;
}

size_t ConnectionTable::open() const {
  const std::lock_guard lock(mutex_);
  return regular_ + health_only_;
}

void ConnectionTable::wait_locked(Slot& slot, Slot::State state, std::function<void()> close) {
  if (slot.evicted_) return;
  unlist_locked(slot);
  leave_busy_locked(slot);
  slot.state_ = state;
  slot.close_ = std::move(close);
  std::list<Slot*>* list = nullptr;
  if (slot.kind_ == Kind::regular) {
    list = &list_of(state);
  } else if (state == Slot::State::head) {
    // A health-only connection serves one request: it is never idle.
    list = &health_heads_;
  }
  if (!list) return;
  slot.position_ = list->insert(list->end(), &slot);
  slot.listed_ = true;
}

void ConnectionTable::unlist_locked(Slot& slot) {
  if (!slot.listed_) return;
  if (slot.kind_ == Kind::regular) {
    list_of(slot.state_).erase(slot.position_);
  } else {
    health_heads_.erase(slot.position_);
  }
  slot.listed_ = false;
}

void ConnectionTable::leave_busy_locked(Slot& slot) {
  if (!slot.anonymous_busy_) return;
  slot.anonymous_busy_ = false;
  --anonymous_busy_;
}

std::function<void()> ConnectionTable::take_victim_locked(const std::string* source) {
  for (auto* list : {&heads_, &idle_}) {
    for (Slot* slot : *list) {
      if (source && slot->source_ != *source) continue;
      unlist_locked(*slot);
      // Its place is given away now; the connection closes soon and frees its fd.
      slot->evicted_ = true;
      --regular_;  // only regular connections are in these lists
      if (--per_source_[slot->source_] == 0) per_source_.erase(slot->source_);
      return std::exchange(slot->close_, nullptr);
    }
  }
  return {};
}

void ConnectionTable::release(Slot& slot) {
  const std::lock_guard lock(mutex_);
  unlist_locked(slot);
  leave_busy_locked(slot);
  if (slot.evicted_) return;
  if (slot.kind_ == Kind::regular) {
    --regular_;
    if (--per_source_[slot.source_] == 0) per_source_.erase(slot.source_);
  } else {
    --health_only_;
  }
}

}  // namespace abx::daemon::http
