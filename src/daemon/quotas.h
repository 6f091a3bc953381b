// Per-team quotas and the host's global caps, checked before a sandbox is
// made. Limits come from the daemon's config file (<data>/config.json) and
// per team from the admin API (stored in the state store, which wins). A
// refusal is an Error of kind kErrQuota (429) saying which limit, its value
// and how to raise it.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/sandbox_row.h"
#include "daemon/store.h"

namespace abx::daemon {

// 0 means no limit.
struct TeamQuota {
  uint32_t max_sandboxes = 0;       // live at once
  uint64_t max_memory_mb = 0;       // sum of live sandboxes' memory limits
  uint64_t max_disk_mb = 0;         // sum of live sandboxes' disk limits
  uint32_t max_timeout_sec = 0;     // longest lifetime a create or timeout may ask
  uint32_t creates_per_minute = 0;  // admitted creates in any 60 s
  // Snapshots kept at once, and the bytes their layers hold; unlike the
  // others these have limits by default (disk is the host's to lose).
  uint32_t max_snapshots = 100;
  uint64_t max_snapshot_disk_mb = 10240;
  // Connections the team's sandboxes may hold in the egress proxy at once;
  // 0 (the default): half the proxy's table, so other teams always find room.
  uint32_t max_proxy_connections = 0;
  // Volumes kept at once, and the MB each may hold (limits by default too).
  uint32_t max_volumes = 100;
  uint64_t max_volume_mb = 1024;
};

nlohmann::json quota_to_json(const TeamQuota& quota);
// Fields absent from `json` keep their value in `base`.
Result<TeamQuota> quota_from_json(const nlohmann::json& json, TeamQuota base = {});

struct QuotaConfig {
  TeamQuota defaults;  // for teams without their own entry
  std::map<std::string, TeamQuota> teams;
  // Memory limits overcommit by default, as Docker's and Kubernetes' do: an
  // idle sandbox uses about 1 MiB of its 512 MiB limit. Creates are refused
  // only under real pressure, when MemAvailable is below this share of
  // MemTotal.
  double memory_reserve_percent = 5;
  // Set (hostCaps.memoryPercent): strict instead, live sandboxes' limits may
  // commit at most this share of MemTotal.
  std::optional<double> memory_percent;
  double disk_percent = 90;  // of the data dir's filesystem that live sandboxes' limits may commit
};

// {"quotas": {"default": {...}, "teams": {"acme": {...}}},
//  "hostCaps": {"memoryReservePercent": 5, "diskPercent": 90}} (or
// "memoryPercent": N for strict memory limits); a missing file is the
// defaults (no team limits, overcommitted memory, a 90 % disk cap).
Result<QuotaConfig> load_quota_config(const std::filesystem::path& file);

// What a create asks for.
struct Demand {
  uint64_t memory_mb = 0;
  uint64_t disk_mb = 0;
  int timeout_sec = 0;
};

struct HostSize {
  uint64_t memory_mb = 0;  // MemTotal
  uint64_t disk_mb = 0;    // the data dir's filesystem
  // MemAvailable now; none: the reserve is not checked.
  std::function<uint64_t()> available_memory_mb;
};
HostSize measure_host(const std::filesystem::path& data_dir);

class Quotas {
 public:
  using LiveRows = std::function<std::vector<SandboxRow>()>;

  Quotas(QuotaConfig config, HostSize host, Store& store);

  TeamQuota quota_for(const std::string& team) const;
  Status set_team_quota(const std::string& team, const TeamQuota& quota);

  // Admits a create for `team` or says which limit refuses it. `live` lists
  // the live sandboxes; creates admitted but not yet settled count too. On
  // success returns a ticket to settle() once the sandbox is live or failed.
  Result<uint64_t> admit_create(const std::string& team, const Demand& demand,
                                const LiveRows& live);
  void settle(uint64_t ticket);
  // Whether `team`, holding `count` snapshots of `bytes` in all, may keep
  // one more of `adding` bytes (0 before the copy: only the count is known).
  Status check_snapshot(const std::string& team, size_t count, uint64_t bytes,
                        uint64_t adding) const;
  // Whether `team`, holding `count` volumes, may make one more.
  Status check_volumes(const std::string& team, size_t count) const;
  // A timeout (create, /timeout, /connect) longer than the team allows.
  Status check_timeout(const std::string& team, int seconds) const;

  const HostSize& host() const { return host_; }

 private:
  Status check_limits(const std::string& team, const TeamQuota& quota, const Demand& demand,
                      const std::vector<SandboxRow>& live) const;
  Status check_rate(const std::string& team, const TeamQuota& quota, int64_t now);
  Status check_host(const Demand& demand, const std::vector<SandboxRow>& live) const;
  // With overcommitted limits: refused while MemAvailable is under the reserve.
  Status check_memory_pressure() const;

  QuotaConfig config_;
  HostSize host_;
  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::string, TeamQuota> stored_;  // set through the admin API
  std::map<uint64_t, std::pair<std::string, Demand>> pending_;
  std::map<std::string, std::deque<int64_t>> recent_creates_;  // ms, per team
  uint64_t next_ticket_ = 1;
};

}  // namespace abx::daemon
