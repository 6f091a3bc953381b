#include "daemon/usage.h"

#include <ctime>
#include <regex>

namespace abx::daemon {
namespace {

using nlohmann::json;

constexpr const char* kKind = "usage";

json to_json(const UsageTotals& totals) {
  return {{"sandboxSeconds", totals.sandbox_seconds},
          {"peakMemoryBytes", totals.peak_memory_bytes},
          {"bytesIn", totals.bytes_in},
          {"bytesOut", totals.bytes_out},
          {"sandboxesCreated", totals.sandboxes_created}};
}

UsageTotals from_json(const std::string& team, const json& data) {
  UsageTotals totals;
  totals.team = team;
  totals.sandbox_seconds = data.value("sandboxSeconds", 0.0);
  totals.peak_memory_bytes = data.value("peakMemoryBytes", uint64_t{0});
  totals.bytes_in = data.value("bytesIn", uint64_t{0});
  totals.bytes_out = data.value("bytesOut", uint64_t{0});
  totals.sandboxes_created = data.value("sandboxesCreated", uint64_t{0});
  return totals;
}

}  // namespace

std::string utc_day(int64_t unix_ms) {
  const std::time_t t = unix_ms / 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &tm);
  return text;
}

bool is_utc_day(const std::string& text) {
  static const std::regex kDay("[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])");
  return std::regex_match(text, kDay);
}

Usage::Usage(Store& store) : store_(store) {
  auto stored = store_.load_records(kKind);
  if (!stored) return;
  for (const auto& [name, data] : *stored) {
    const size_t bar = name.find('|');
    if (bar == std::string::npos) continue;
    const std::string team = name.substr(0, bar);
    days_[{team, name.substr(bar + 1)}] = from_json(team, data);
  }
}

UsageTotals& Usage::bucket(const std::string& team, int64_t now_ms) {
  const auto key = std::make_pair(team, utc_day(now_ms));
  dirty_[key] = true;
  UsageTotals& totals = days_[key];
  totals.team = team;
  return totals;
}

void Usage::add_seconds(const std::string& team, double seconds, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  bucket(team, now_ms).sandbox_seconds += seconds;
}

void Usage::note_memory(const std::string& team, uint64_t bytes, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  UsageTotals& totals = bucket(team, now_ms);
  totals.peak_memory_bytes = std::max(totals.peak_memory_bytes, bytes);
}

void Usage::add_bytes(const std::string& team, uint64_t in, uint64_t out, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  UsageTotals& totals = bucket(team, now_ms);
  totals.bytes_in += in;
  totals.bytes_out += out;
}

void Usage::note_create(const std::string& team, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  ++bucket(team, now_ms).sandboxes_created;
}

Status Usage::flush() {
  std::map<std::string, json> writes;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, dirty] : dirty_) {
      writes[key.first + "|" + key.second] = to_json(days_[key]);
    }
    dirty_.clear();
  }
  for (const auto& [name, data] : writes) {
    if (Status s = store_.put_record(kKind, name, data); !s) return s;
  }
  return {};
}

std::vector<UsageTotals> Usage::report(const std::optional<std::string>& team,
                                       const std::string& since_day) const {
  std::map<std::string, UsageTotals> sums;
  std::lock_guard lock(mutex_);
  for (const auto& [key, day] : days_) {
    if (key.second < since_day || (team && key.first != *team)) continue;
    UsageTotals& sum = sums[key.first];
    sum.team = key.first;
    sum.sandbox_seconds += day.sandbox_seconds;
    sum.peak_memory_bytes = std::max(sum.peak_memory_bytes, day.peak_memory_bytes);
    sum.bytes_in += day.bytes_in;
    sum.bytes_out += day.bytes_out;
    sum.sandboxes_created += day.sandboxes_created;
  }
  std::vector<UsageTotals> out;
  for (auto& [name, sum] : sums) out.push_back(std::move(sum));
  return out;
}

}  // namespace abx::daemon
