#include "daemon/quotas.h"

#include <sys/statvfs.h>

#include <fstream>
#include <sstream>
#include <tuple>

#include "common/clock.h"
#include "common/fd_io.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kKind = "team_quota";
// The runtime's defaults (runtime.h Limits) for a create that names none.
constexpr uint64_t kDefaultMemoryMb = 512;
constexpr uint64_t kDefaultDiskMb = 1024;
constexpr int64_t kRateWindowMs = 60'000;

// The JSON names of TeamQuota's fields.
struct QuotaField {
  const char* json_name;
  const char* flag;  // how `abx quota set` names it
  uint64_t TeamQuota::*wide = nullptr;
  uint32_t TeamQuota::*narrow = nullptr;
};

const QuotaField kFields[] = {
    {"maxSandboxes", "--sandboxes", nullptr, &TeamQuota::max_sandboxes},
    {"maxMemoryMB", "--memory-mb", &TeamQuota::max_memory_mb, nullptr},
    {"maxDiskMB", "--disk-mb", &TeamQuota::max_disk_mb, nullptr},
    {"maxTimeoutSec", "--max-timeout", nullptr, &TeamQuota::max_timeout_sec},
    {"createsPerMinute", "--creates-per-minute", nullptr, &TeamQuota::creates_per_minute},
    {"maxSnapshots", "--snapshots", nullptr, &TeamQuota::max_snapshots},
    {"maxSnapshotDiskMB", "--snapshot-disk-mb", &TeamQuota::max_snapshot_disk_mb, nullptr},
    {"maxProxyConnections", "--proxy-connections", nullptr, &TeamQuota::max_proxy_connections},
    {"maxVolumes", "--volumes", nullptr, &TeamQuota::max_volumes},
    {"maxVolumeMB", "--volume-mb", &TeamQuota::max_volume_mb, nullptr},
};

Error refusal(const std::string& team, const std::string& what, uint64_t limit, const char* flag,
              const std::string& advice, int retry_after_s = 0) {
  Error error = Error::with_message(
      "quota: team " + team + " " + what + " (limit " + std::to_string(limit) + "); " + advice +
          ", or an admin raises it: abx quota set --team " + team + " " + flag + " N",
      kErrQuota);
  error.retry_after_s = retry_after_s;
  return error;
}

uint64_t memory_of(const SandboxRow& row) { return row.memory_mb; }
uint64_t disk_of(const SandboxRow& row) { return row.disk_size_mb; }

// A /proc/meminfo field ("MemTotal:", "MemAvailable:") in MB; 0 if absent.
uint64_t meminfo_mb(const std::string& field) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == field) return kib >> 10;
    meminfo.ignore(64, '\n');
  }
  return 0;
}

}  // namespace

json quota_to_json(const TeamQuota& quota) {
  json out = json::object();
  for (const auto& field : kFields) {
    out[field.json_name] = field.wide ? quota.*field.wide : uint64_t{quota.*field.narrow};
  }
  return out;
}

Result<TeamQuota> quota_from_json(const json& doc, TeamQuota base) {
  if (!doc.is_object()) return Error::with_message("quota: must be an object", kErrBadInput);
  for (const auto& [name, value] : doc.items()) {
    const auto* field = std::find_if(std::begin(kFields), std::end(kFields),
                                     [&](const QuotaField& f) { return name == f.json_name; });
    if (field == std::end(kFields)) {
      return Error::with_message(
          "quota: unknown field '" + name +
              "'; known: maxSandboxes, maxMemoryMB, maxDiskMB, "
              "maxTimeoutSec, createsPerMinute, maxSnapshots, maxSnapshotDiskMB, "
              "maxProxyConnections, maxVolumes, maxVolumeMB",
          kErrBadInput);
    }
    if (!value.is_number_unsigned() || value.get<uint64_t>() > UINT32_MAX) {
      return Error::with_message(
          "quota: " + name + " must be a whole number from 0 (no limit) to 4294967295",
          kErrBadInput);
    }
    if (field->wide)
      base.*field->wide = value.get<uint64_t>();
    else
      base.*field->narrow = value.get<uint32_t>();
  }
  return base;
}

Result<QuotaConfig> load_quota_config(const fs::path& file) {
  QuotaConfig config;
  auto text = read_file(file);
  if (!text) return text.error().errnum == ENOENT ? Result<QuotaConfig>(config) : text.error();
  const json doc = json::parse(*text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return Error::with_message("config " + file.string() + ": " + why, kErrBadInput);
  };
  if (!doc.is_object()) return bad("not a JSON object");
  const json quotas = doc.contains("quotas") ? doc["quotas"] : json::object();
  if (!quotas.is_object()) return bad("quotas: must be an object");
  if (quotas.contains("default")) {
    auto quota = quota_from_json(quotas["default"]);
    if (!quota) return bad(quota.error().message());
    config.defaults = *quota;
  }
  const json teams = quotas.contains("teams") ? quotas["teams"] : json::object();
  if (!teams.is_object()) return bad("quotas.teams: must be an object");
  for (const auto& [team, value] : teams.items()) {
    auto quota = quota_from_json(value, config.defaults);
    if (!quota) return bad("team " + team + ": " + quota.error().message());
    config.teams[team] = *quota;
  }
  const json caps = doc.contains("hostCaps") ? doc["hostCaps"] : json::object();
  if (!caps.is_object()) return bad("hostCaps: must be an object");
  double memory_percent = 0;
  for (auto [name, percent, most] :
       {std::tuple{"memoryPercent", &memory_percent, 1000.0},
        std::tuple{"diskPercent", &config.disk_percent, 1000.0},
        std::tuple{"memoryReservePercent", &config.memory_reserve_percent, 99.0}}) {
    if (!caps.contains(name)) continue;
    // Above 100 overcommits: limits are caps, and many sandboxes use far less.
    if (!caps[name].is_number() || caps[name].get<double>() <= 0 || caps[name].get<double>() > most)
      return bad(std::string("hostCaps.") + name + " must be a number in (0, " +
                 std::to_string(static_cast<int>(most)) + "]");
    *percent = caps[name].get<double>();
  }
  if (caps.contains("memoryPercent")) config.memory_percent = memory_percent;
  return config;
}

HostSize measure_host(const fs::path& data_dir) {
  HostSize size;
  size.memory_mb = meminfo_mb("MemTotal:");
  size.available_memory_mb = [] { return meminfo_mb("MemAvailable:"); };
  struct statvfs vfs {};
  if (::statvfs(data_dir.c_str(), &vfs) == 0) {
    size.disk_mb = (uint64_t{vfs.f_blocks} * vfs.f_frsize) >> 20;
  }
  return size;
}

Quotas::Quotas(QuotaConfig config, HostSize host, Store& store)
    : config_(std::move(config)), host_(host), store_(store) {
  if (auto stored = store_.load_records(kKind)) {
    for (const auto& [team, data] : *stored) {
      if (auto quota = quota_from_json(data)) stored_[team] = *quota;
    }
  }
}

TeamQuota Quotas::quota_for(const std::string& team) const {
  std::lock_guard lock(mutex_);
  if (const auto it = stored_.find(team); it != stored_.end()) return it->second;
  if (const auto it = config_.teams.find(team); it != config_.teams.end()) return it->second;
  return config_.defaults;
}

Status Quotas::set_team_quota(const std::string& team, const TeamQuota& quota) {
  if (Status s = store_.put_record(kKind, team, quota_to_json(quota)); !s) return s;
  std::lock_guard lock(mutex_);
  stored_[team] = quota;
  return {};
}

Status Quotas::check_timeout(const std::string& team, int seconds) const {
  const TeamQuota quota = quota_for(team);
  if (quota.max_timeout_sec == 0 || seconds <= static_cast<int64_t>(quota.max_timeout_sec))
    return {};
  return refusal(team,
                 "may keep a sandbox alive at most " + std::to_string(quota.max_timeout_sec) +
                     " s, not " + std::to_string(seconds),
                 quota.max_timeout_sec, "--max-timeout", "ask for a shorter timeout");
}

Result<uint64_t> Quotas::admit_create(const std::string& team, const Demand& asked,
                                      const LiveRows& live) {
  Demand demand = asked;
  if (demand.memory_mb == 0) demand.memory_mb = kDefaultMemoryMb;
  if (demand.disk_mb == 0) demand.disk_mb = kDefaultDiskMb;
  if (host_.memory_mb && demand.memory_mb > host_.memory_mb) {
    return Error::with_message("memoryMB: " + std::to_string(demand.memory_mb) +
                                   " is more than this host has (" +
                                   std::to_string(host_.memory_mb) + " MB)",
                               kErrBadInput);
  }
  if (host_.disk_mb && demand.disk_mb > host_.disk_mb) {
    return Error::with_message("diskSizeMB: " + std::to_string(demand.disk_mb) +
                                   " is more than this host's data filesystem has (" +
                                   std::to_string(host_.disk_mb) + " MB)",
                               kErrBadInput);
  }
  const TeamQuota quota = quota_for(team);
  if (Status s = check_timeout(team, demand.timeout_sec); !s) return s.error();
  std::lock_guard lock(mutex_);
  // Inside the lock, so two creates never both fit the last slot.
  std::vector<SandboxRow> rows = live();
  for (const auto& [ticket, entry] : pending_) {
    SandboxRow row;
    row.owner = entry.first;
    row.memory_mb = static_cast<uint32_t>(entry.second.memory_mb);
    row.disk_size_mb = static_cast<uint32_t>(entry.second.disk_mb);
    rows.push_back(std::move(row));
  }
  if (Status s = check_host(demand, rows); !s) return s.error();
  if (Status s = check_limits(team, quota, demand, rows); !s) return s.error();
  if (Status s = check_rate(team, quota, unix_ms_now()); !s) return s.error();
  const uint64_t ticket = next_ticket_++;
  pending_[ticket] = {team, demand};
  return ticket;
}

Status Quotas::check_snapshot(const std::string& team, size_t count, uint64_t bytes,
                              uint64_t adding) const {
  const TeamQuota quota = quota_for(team);
  if (adding == 0 && quota.max_snapshots && count + 1 > quota.max_snapshots)
    return refusal(team, "already keeps " + std::to_string(count) + " snapshots",
                   quota.max_snapshots, "--snapshots", "delete one first (abx snapshot rm)");
  const uint64_t limit = quota.max_snapshot_disk_mb << 20;
  if (quota.max_snapshot_disk_mb && bytes + adding > limit)
    return refusal(
        team, "would keep " + std::to_string((bytes + adding) >> 20) + " MB in snapshots",
        quota.max_snapshot_disk_mb, "--snapshot-disk-mb", "delete one first (abx snapshot rm)");
  return {};
}

Status Quotas::check_volumes(const std::string& team, size_t count) const {
  const TeamQuota quota = quota_for(team);
  if (quota.max_volumes && count + 1 > quota.max_volumes)
    return refusal(team, "already keeps " + std::to_string(count) + " volumes", quota.max_volumes,
                   "--volumes", "delete one first (abx volume rm)");
  return {};
}

void Quotas::settle(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  pending_.erase(ticket);
}

Status Quotas::check_limits(const std::string& team, const TeamQuota& quota, const Demand& demand,
                            const std::vector<SandboxRow>& rows) const {
  uint64_t count = 0, memory = 0, disk = 0;
  for (const SandboxRow& row : rows) {
    if (row.owner != team) continue;
    ++count;
    memory += memory_of(row);
    disk += disk_of(row);
  }
  if (quota.max_sandboxes && count + 1 > quota.max_sandboxes) {
    return refusal(team, "already has " + std::to_string(count) + " live sandboxes",
                   quota.max_sandboxes, "--sandboxes", "kill one first");
  }
  if (quota.max_memory_mb && memory + demand.memory_mb > quota.max_memory_mb) {
    return refusal(team,
                   "would commit " + std::to_string(memory + demand.memory_mb) +
                       " MB of memory in live sandboxes",
                   quota.max_memory_mb, "--memory-mb", "kill one or ask for less memoryMB");
  }
  if (quota.max_disk_mb && disk + demand.disk_mb > quota.max_disk_mb) {
    return refusal(
        team,
        "would commit " + std::to_string(disk + demand.disk_mb) + " MB of disk in live sandboxes",
        quota.max_disk_mb, "--disk-mb", "kill one or ask for less diskSizeMB");
  }
  return {};
}

Status Quotas::check_rate(const std::string& team, const TeamQuota& quota, int64_t now) {
  auto& recent = recent_creates_[team];
  while (!recent.empty() && recent.front() <= now - kRateWindowMs) recent.pop_front();
  if (quota.creates_per_minute && recent.size() >= quota.creates_per_minute) {
    const int64_t wait_ms = recent.front() + kRateWindowMs - now;
    const int retry_after = static_cast<int>((wait_ms + 999) / 1000);
    return refusal(team, "made " + std::to_string(recent.size()) + " sandboxes in the last minute",
                   quota.creates_per_minute, "--creates-per-minute",
                   "retry in " + std::to_string(retry_after) + " s", retry_after);
  }
  recent.push_back(now);
  return {};
}

Status Quotas::check_memory_pressure() const {
  if (!host_.available_memory_mb || !host_.memory_mb) return {};
  const uint64_t available = host_.available_memory_mb();
  const double reserve =
      static_cast<double>(host_.memory_mb) * config_.memory_reserve_percent / 100;
  if (static_cast<double>(available) >= reserve) return {};
  return Error::with_message(
      "host memory pressure: only " + std::to_string(available) + " MB of the host's " +
          std::to_string(host_.memory_mb) + " MB are available (under " +
          std::to_string(static_cast<int>(config_.memory_reserve_percent)) +
          " %); kill or pause sandboxes, or lower hostCaps.memoryReservePercent in the "
          "daemon's config.json",
      kErrQuota);
}

// Disk limits are promises: the host must be able to keep them all at once.
// Memory limits are too with hostCaps.memoryPercent (strict); by default
// they overcommit and only real pressure refuses a create.
Status Quotas::check_host(const Demand& demand, const std::vector<SandboxRow>& rows) const {
  uint64_t memory = demand.memory_mb, disk = demand.disk_mb;
  for (const SandboxRow& row : rows) {
    memory += memory_of(row);
    disk += disk_of(row);
  }
  auto over = [](uint64_t committed, uint64_t total, double percent) {
    return total && static_cast<double>(committed) > static_cast<double>(total) * percent / 100;
  };
  auto cap = [](const std::string& what, uint64_t committed, uint64_t total, double percent) {
    return Error::with_message(
        "host cap: live sandboxes would commit " + std::to_string(committed) + " MB of " + what +
            ", over " + std::to_string(static_cast<int>(percent)) + " % of the host's " +
            std::to_string(total) + " MB; kill sandboxes, or raise hostCaps." + what +
            "Percent in the daemon's config.json",
        kErrQuota);
  };
  if (config_.memory_percent && over(memory, host_.memory_mb, *config_.memory_percent))
    return cap("memory", memory, host_.memory_mb, *config_.memory_percent);
  if (!config_.memory_percent) {
    if (Status s = check_memory_pressure(); !s) return s;
  }
  if (over(disk, host_.disk_mb, config_.disk_percent))
    return cap("disk", disk, host_.disk_mb, config_.disk_percent);
  return {};
}

}  // namespace abx::daemon
