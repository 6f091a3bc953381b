// The ended sandboxes whose flight record is still kept (events.retentionHours
// after they end, event_journal.h), so that one can be found, and its timeline
// read, once it is gone. Read from the records themselves (each one's first
// and last event: `created`, `ended` with why and by which key), so the list
// outlives daemon restarts and keeps no state of its own.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "daemon/event_journal.h"

namespace abx::daemon {

struct EndedSandbox {
  std::string id;
  nlohmann::json created;  // its `created` event; {} when rotated out of the record
  nlohmann::json ended;    // its `ended` event; {} when none was recorded
  int64_t ended_ms = 0;    // the `ended` event's time, or the record's last
};

struct EndedSandboxes {
  std::vector<EndedSandbox> sandboxes;  // the newest end first
  bool truncated = false;               // more were kept than `limit`
};

// A record with no `ended` (the daemon stopped before it could write one)
// counts as ended only when its sandbox is not in `live` and nothing was
// recorded for this long: a sandbox being created or killed this moment has
// no `ended` yet, nor is it live, for a while.
inline constexpr int64_t kNoEndSettleMs = 30'000;

// `team`'s sandboxes with a kept record but none of `live` (the team's live
// and paused ones), the newest end first, at most `limit`.
EndedSandboxes list_ended(const EventJournals& journals, const std::string& team,
                          const std::set<std::string>& live, size_t limit, int64_t now_ms);

}  // namespace abx::daemon
