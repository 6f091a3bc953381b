// abx quota [--team T] | abx quota set --team T --sandboxes N …: a team's
// quotas (0 = no limit). Reading needs a key of that team or an admin key;
// setting needs an admin key.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"

namespace abx::cli {
namespace {

struct QuotaOptions {
  std::string team;
  std::map<std::string, uint64_t> values;  // JSON field → value, only those given
};

// Each settable limit: the flag, the JSON field, what it limits.
struct QuotaFlag {
  const char* flag;
  const char* field;
  const char* help;
};

const QuotaFlag kFlags[] = {
    {"--sandboxes", "maxSandboxes", "Live sandboxes at once"},
    {"--memory-mb", "maxMemoryMB", "Sum of live sandboxes' memoryMB"},
    {"--disk-mb", "maxDiskMB", "Sum of live sandboxes' diskSizeMB"},
    {"--max-timeout", "maxTimeoutSec", "Longest timeout a sandbox may ask, in seconds"},
    {"--creates-per-minute", "createsPerMinute", "Creates admitted in any 60 s"},
    {"--snapshots", "maxSnapshots", "Snapshots kept at once (default 100)"},
    {"--snapshot-disk-mb", "maxSnapshotDiskMB", "MB the team's snapshots hold (default 10240)"},
    {"--proxy-connections", "maxProxyConnections",
     "Connections held in the egress proxy at once (default 0: half its table)"},
    {"--volumes", "maxVolumes", "Volumes kept at once (default 100)"},
    {"--volume-mb", "maxVolumeMB", "MB each of the team's volumes may hold (default 1024)"},
};

std::string team_path(const std::string& team) { return "/abx/v1/teams/" + team + "/quota"; }

void print_quota(const json& quota) {
  std::cout << "team " << quota.value("team", "") << "\n";
  for (const auto& flag : kFlags) {
    const uint64_t value = quota.value(flag.field, uint64_t{0});
    std::cout << "  " << flag.field << ": " << (value ? std::to_string(value) : "no limit") << "\n";
  }
}

Result<int> run_quota_show(const std::string& team) {
  auto quota = call_api("GET", team_path(team.empty() ? "default" : team));
  if (!quota) return quota.error();
  print_quota(*quota);
  return 0;
}

Result<int> run_set(const QuotaOptions& options) {
  if (options.values.empty()) {
    return Error::with_message("abx quota set: name at least one limit, e.g. --sandboxes 10");
  }
  auto quota = call_api("PUT", team_path(options.team), json(options.values).dump());
  if (!quota) return quota.error();
  print_quota(*quota);
  return 0;
}

}  // namespace

void add_quota(CLI::App& root, Commands& commands) {
  auto* quota = root.add_subcommand("quota", "Show or set a team's quotas (0 = no limit)");
  auto team = std::make_shared<std::string>();
  quota->add_option("--team", *team, "The team (default: default)");
  auto options = std::make_shared<QuotaOptions>();
  auto* set = quota->add_subcommand("set", "Set a team's limits (needs an admin key)");
  set->add_option("--team", options->team, "The team")->required();
  for (const auto& flag : kFlags) {
    set->add_option_function<uint64_t>(
        flag.flag,
        [options, field = flag.field](uint64_t value) { options->values[field] = value; },
        flag.help);
  }
  commands.push_back({set, [options] { return run_set(*options); }});
  commands.push_back({quota, [team] { return run_quota_show(*team); }});
}

}  // namespace abx::cli
