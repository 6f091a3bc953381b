#include "daemon/ended_logs.h"

namespace abx::daemon {

void EndedLogs::keep(const std::string& id, const std::string& owner,
                     std::shared_ptr<SandboxLog> log, int64_t now_ms) {
  log->keep_newest(kMaxEntries);
  std::lock_guard lock(mutex_);
  if (kept_.insert_or_assign(id, Kept{owner, now_ms, std::move(log)}).second) order_.push_back(id);
  while (order_.size() > kMaxSandboxes ||
         (!order_.empty() && kept_.at(order_.front()).ended_ms + kKeepMs <= now_ms)) {
    kept_.erase(order_.front());
    order_.pop_front();
  }
}

std::shared_ptr<const SandboxLog> EndedLogs::find(const std::string& id, const std::string& owner,
                                                  int64_t now_ms) const {
  std::lock_guard lock(mutex_);
  const auto it = kept_.find(id);
  if (it == kept_.end() || it->second.owner != owner || it->second.ended_ms + kKeepMs <= now_ms)
    return nullptr;
  return it->second.log;
}

}  // namespace abx::daemon
