#include "daemon/connection_table.h"

#include <utility>

namespace abx::daemon::http {

ConnectionTable::Slot::~Slot() { table_.release(*this); }

void ConnectionTable::Slot::set_idle(std::function<void()> close) {
  // A health-only connection is short-lived already; closing it would not
  // make room for a regular one.
  if (kind_ == Kind::health_only) return;
  const std::lock_guard lock(table_.mutex_);
  if (evicted_ || idle_) return;
  close_ = std::move(close);
  idle_ = true;
  idle_position_ = table_.idle_.insert(table_.idle_.end(), this);
}

bool ConnectionTable::Slot::set_busy() {
  const std::lock_guard lock(table_.mutex_);
  if (evicted_) return false;
  if (idle_) {
    table_.idle_.erase(idle_position_);
    idle_ = false;
    close_ = nullptr;
  }
  return true;
}

std::unique_ptr<ConnectionTable::Slot> ConnectionTable::admit(bool last_fd) {
  std::function<void()> close_idle;
  std::unique_ptr<Slot> slot;
  {
    const std::lock_guard lock(mutex_);
    if (!last_fd && regular_ < limit_) {
      ++regular_;
      slot.reset(new Slot(*this, Kind::regular));
    } else if (!last_fd && (close_idle = take_longest_idle_locked())) {
      ++regular_;
      slot.reset(new Slot(*this, Kind::regular));
    } else if (health_only_ < overflow_) {
      ++health_only_;
      slot.reset(new Slot(*this, Kind::health_only));
    }
  }
  if (close_idle) close_idle();
  return slot;
}

bool ConnectionTable::evict_longest_idle() {
  std::function<void()> close_idle;
  {
    const std::lock_guard lock(mutex_);
    close_idle = take_longest_idle_locked();
  }
  if (!close_idle) return false;
  close_idle();
  return true;
}

size_t ConnectionTable::open() const {
  const std::lock_guard lock(mutex_);
  return regular_ + health_only_;
}

std::function<void()> ConnectionTable::take_longest_idle_locked() {
  if (idle_.empty()) return {};
  Slot* slot = idle_.front();
  idle_.pop_front();
  slot->idle_ = false;
  // Its place is given away now; the connection closes soon and frees its fd.
  slot->evicted_ = true;
  --regular_;  // only regular connections are ever idle
  return std::exchange(slot->close_, nullptr);
}

void ConnectionTable::release(Slot& slot) {
  const std::lock_guard lock(mutex_);
  if (slot.idle_) idle_.erase(slot.idle_position_);
  if (slot.evicted_) return;
  if (slot.kind_ == Kind::regular) {
    --regular_;
  } else {
    --health_only_;
  }
}

}  // namespace abx::daemon::http
