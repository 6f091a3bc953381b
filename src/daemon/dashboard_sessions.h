// The dashboard's login sessions: a browser that gave an API key once holds
// a random session id in a cookie, never the key. The table maps the id to
// the key's id (so revoking the key ends its sessions) and a CSRF token the
// page must echo in a header on every state-changing request. It knows
// nothing of HTTP: cookies and headers are the routes' business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace abx::daemon {

struct DashboardSession {
  std::string key_id;  // the API key that logged in (ApiKeys::caller_for_id)
  std::string csrf;    // echoed by the page in X-ABX-CSRF
  int64_t expires_ms = 0;
};

class DashboardSessions {
 public:
  // Bounded: a caller logging in in a loop cannot grow the daemon's memory,
  // and evicts its own key's oldest sessions, not other callers'.
  static constexpr size_t kMaxSessions = 1024;
  static constexpr size_t kMaxPerKey = 32;
  static constexpr int64_t kLifetimeMs = int64_t{12} * 3600 * 1000;

  struct Opened {
    std::string id;  // the cookie's value
    std::string csrf;
  };
  Opened open(const std::string& key_id, int64_t now_ms);
  // The live session with this id; an expired one is dropped.
  std::optional<DashboardSession> find(std::string_view id, int64_t now_ms);
  void close(std::string_view id);
  size_t size() const;

 private:
  void evict_for_one_more(const std::string& key_id, int64_t now_ms);

  mutable std::mutex mutex_;
  // Keyed by the sha256 of the id: a lookup's timing tells nothing about
  // the ids held, and the table never holds a usable cookie.
  std::map<std::string, DashboardSession> by_hash_;
};

}  // namespace abx::daemon
