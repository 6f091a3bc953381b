// What each team used, per UTC day: sandbox-seconds, peak memory, bytes
// through the files API, sandboxes made. Kept in memory, written to the state
// store by flush() (the daemon flushes every few seconds and at exit), so a
// sandbox's quota use is visible for as long as it lives.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/store.h"

namespace abx::daemon {

struct UsageTotals {
  std::string team;
  double sandbox_seconds = 0;
  uint64_t peak_memory_bytes = 0;
  uint64_t bytes_in = 0;   // uploaded into sandboxes
  uint64_t bytes_out = 0;  // downloaded from sandboxes
  uint64_t sandboxes_created = 0;
};

// "YYYY-MM-DD" (UTC) of a unix time in ms.
std::string utc_day(int64_t unix_ms);
// True for a valid "YYYY-MM-DD".
bool is_utc_day(const std::string& text);

class Usage {
 public:
  explicit Usage(Store& store);

  void add_seconds(const std::string& team, double seconds, int64_t now_ms);
  void note_memory(const std::string& team, uint64_t bytes, int64_t now_ms);
  void add_bytes(const std::string& team, uint64_t in, uint64_t out, int64_t now_ms);
  void note_create(const std::string& team, int64_t now_ms);
  Status flush();

  // Sums from `since_day` on (inclusive), per team; only `team` when given.
  std::vector<UsageTotals> report(const std::optional<std::string>& team,
                                  const std::string& since_day) const;

 private:
  UsageTotals& bucket(const std::string& team, int64_t now_ms);

  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, UsageTotals> days_;  // (team, day)
  std::map<std::pair<std::string, std::string>, bool> dirty_;
};

}  // namespace abx::daemon
