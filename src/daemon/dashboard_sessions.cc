#include "daemon/dashboard_sessions.h"

#include <algorithm>

#include "common/ids.h"
#include "common/sha256.h"

namespace abx::daemon {

DashboardSessions::Opened DashboardSessions::open(const std::string& key_id, int64_t now_ms) {
  Opened opened{ids::random_hex(32), ids::random_hex(32)};
  std::lock_guard lock(mutex_);
  evict_for_one_more(key_id, now_ms);
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

// Drops the expired sessions, then the oldest of this key's when it has its
// share, then (still full) the oldest of all: every session lives equally
// long, so the one that ends soonest is the oldest.
void DashboardSessions::evict_for_one_more(const std::string& key_id, int64_t now_ms) {
  std::erase_if(by_hash_, [&](const auto& entry) { return entry.second.expires_ms <= now_ms; });
  const auto sooner = [](const auto& a, const auto& b) {
    return a.second.expires_ms < b.second.expires_ms;
  };
  auto oldest_of_key = by_hash_.end();
  size_t of_key = 0;
  for (auto it = by_hash_.begin(); it != by_hash_.end(); ++it) {
    if (it->second.key_id != key_id) continue;
    ++of_key;
    if (oldest_of_key == by_hash_.end() || sooner(*it, *oldest_of_key)) oldest_of_key = it;
  }
  if (of_key >= kMaxPerKey) by_hash_.erase(oldest_of_key);
  if (by_hash_.size() < kMaxSessions) return;
  by_hash_.erase(std::min_element(by_hash_.begin(), by_hash_.end(), sooner));
}

}  // namespace abx::daemon
