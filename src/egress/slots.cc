#include "egress/slots.h"

namespace abx::egress {
namespace {

size_t count_of(const auto& counts, const auto& key) {
  const auto it = counts.find(key);
  return it == counts.end() ? 0 : it->second;
}

template <typename Map, typename Key>
void decrement(Map& counts, const Key& key) {
  const auto it = counts.find(key);
  if (it != counts.end() && --it->second == 0) counts.erase(it);
}

}  // namespace

size_t SlotTable::held_by_team(const std::string& team) const {
  return count_of(per_team_count_, team);
}

SlotTable::Admission SlotTable::admit(uint32_t source, const std::string& team,
                                      size_t team_cap) const {
  if (count_of(per_source_count_, source) >= per_source_)
    return {.refusal = "the sandbox holds its " + std::to_string(per_source_) + " connections"};
  const size_t mine = held_by_team(team);
  if (team_cap != 0 && mine >= team_cap)
    return {.refusal = "the team holds its " + std::to_string(team_cap) + " connections"};
  if (entries_.size() < global_) return {.admitted = true};
  // Full: the team holding the most gives a slot up, unless that is this team
  // (or one no bigger): a team at or over its fair share waits for room.
  const std::string* largest = nullptr;
  size_t most = 0;
  for (const auto& [name, held] : per_team_count_)
    if (held > most) most = held, largest = &name;
  if (largest == nullptr || most <= mine + 1)
    return {.refusal = "the table of " + std::to_string(global_) + " connections is full"};
  return {.admitted = true, .evict = idlest_of(*largest)};
}

// The connection of `team` that moved a byte longest ago (idle ones first).
std::optional<uint64_t> SlotTable::idlest_of(const std::string& team) const {
  std::optional<uint64_t> idlest;
  int64_t oldest = 0;
  for (const auto& [id, entry] : entries_) {
    if (entry.team != team) continue;
    const int64_t at = entry.activity ? entry.activity->load(std::memory_order_relaxed) : 0;
    if (!idlest || at < oldest) idlest = id, oldest = at;
  }
  return idlest;
}

void SlotTable::add(uint64_t id, uint32_t source, const std::string& team, ActivityStamp activity) {
  entries_[id] = Entry{source, team, std::move(activity)};
  ++per_source_count_[source];
  ++per_team_count_[team];
}

void SlotTable::remove(uint64_t id) {
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  decrement(per_source_count_, it->second.source);
  decrement(per_team_count_, it->second.team);
  entries_.erase(it);
}

}  // namespace abx::egress
