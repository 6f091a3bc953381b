// The logs of sandboxes that ended (killed, timed out, stopped), kept a
// while, as E2B answers a killed sandbox's logs too: the newest
// kMaxSandboxes, each cut to its newest kMaxEntries lines (at most ~15 MB in
// all), for kKeepMs. Only the sandbox's team hears them.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/sandbox_log.h"

namespace abx::daemon {

class EndedLogs {
 public:
  static constexpr size_t kMaxSandboxes = 128;
  static constexpr size_t kMaxEntries = 200;
  static constexpr int64_t kKeepMs = 3'600'000;

  // `log` is cut to its newest entries and kept; later adds to it are kept too.
  void keep(const std::string& id, const std::string& owner, std::shared_ptr<SandboxLog> log,
            int64_t now_ms);
  // The log of an ended sandbox of `owner`'s, or null.
  std::shared_ptr<const SandboxLog> find(const std::string& id, const std::string& owner,
                                         int64_t now_ms) const;

 private:
  struct Kept {
    std::string owner;
    int64_t ended_ms = 0;
    std::shared_ptr<SandboxLog> log;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Kept> kept_;
  std::deque<std::string> order_;  // oldest first
};

}  // namespace abx::daemon
