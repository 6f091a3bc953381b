#include "daemon/ended_sandboxes.h"

#include <algorithm>

namespace abx::daemon {
namespace {

bool is_end(const nlohmann::json& event) {
  return event.value("type", "") == "lifecycle" && event.value("event", "") == "ended";
}

}  // namespace

EndedSandboxes list_ended(const EventJournals& journals, const std::string& team,
                          const std::set<std::string>& live, size_t limit, int64_t now_ms) {
  EndedSandboxes out;
  for (const std::string& id : journals.ids()) {
    if (live.count(id)) continue;
    auto bounds = journals.bounds(id, team);
    if (!bounds) continue;  // another team's, or unreadable
    EndedSandbox ended{id, std::move(bounds->first), nlohmann::json::object(),
                       bounds->last.value("at", int64_t{0})};
    if (is_end(bounds->last))
      ended.ended = std::move(bounds->last);
    else if (now_ms - ended.ended_ms < kNoEndSettleMs)
      continue;
    if (ended.created.value("event", "") != "created") ended.created = nlohmann::json::object();
    out.sandboxes.push_back(std::move(ended));
  }
  std::sort(out.sandboxes.begin(), out.sandboxes.end(),
            [](const EndedSandbox& a, const EndedSandbox& b) {
              return a.ended_ms != b.ended_ms ? a.ended_ms > b.ended_ms : a.id < b.id;
            });
  if (out.sandboxes.size() > limit) {
    out.sandboxes.resize(limit);
    out.truncated = true;
  }
  return out;
}

}  // namespace abx::daemon
