#include "daemon/dashboard_sessions.h"

#include <algorithm>

#include "common/ids.h"
#include "common/sha256.h"

namespace abx::daemon {

DashboardSessions::Opened DashboardSessions::open(const std::string& key_id, int64_t now_ms) {
  Opened opened{ids::random_hex(32), ids::random_hex(32)};
  std::lock_guard lock(mutex_);
  evict_for_one_more(now_ms);
  by_hash_[sha256_hex(opened.id)] = DashboardSession{key_id, opened.csrf, now_ms + kLifetimeMs};
  return opened;
}

std::optional<DashboardSession> DashboardSessions::find(std::string_view id, int64_t now_ms) {
  if (id.empty()) return std::nullopt;
  const std::string hash = sha256_hex(id);
  std::lock_guard lock(mutex_);
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  if (it->second.expires_ms <= now_ms) {
    by_hash_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void DashboardSessions::close(std::string_view id) {
  if (id.empty()) return;
  const std::string hash = sha256_hex(id);
  std::lock_guard lock(mutex_);
  by_hash_.erase(hash);
}

size_t DashboardSessions::size() const {
  std::lock_guard lock(mutex_);
  return by_hash_.size();
}

// Drops the expired sessions, then (still full) the one that ends soonest:
// all sessions live equally long, so that is the oldest.
void DashboardSessions::evict_for_one_more(int64_t now_ms) {
  std::erase_if(by_hash_, [&](const auto& entry) { return entry.second.expires_ms <= now_ms; });
  if (by_hash_.size() < kMaxSessions) return;
  const auto oldest = std::min_element(by_hash_.begin(), by_hash_.end(), [](auto& a, auto& b) {
    return a.second.expires_ms < b.second.expires_ms;
  });
  by_hash_.erase(oldest);
}

}  // namespace abx::daemon
