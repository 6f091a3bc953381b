// abx usage [--team T] [--since DATE]: what teams used (sandbox-seconds, peak
// memory, bytes through the files API, sandboxes made). A key sees its own
// team's; an admin key every team's.
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

struct UsageOptions {
  std::string team;
  std::string since;
  bool as_json = false;
};

std::string hours(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << seconds / 3600 << " h";
  return out.str();
}

Result<int> run_usage(const UsageOptions& options) {
  std::string target = "/abx/v1/usage?";
  if (!options.team.empty()) target += "team=" + options.team + "&";
  if (!options.since.empty()) target += "since=" + options.since;
  auto usage = call_api("GET", target);
  if (!usage) return usage.error();
  if (options.as_json) {
    std::cout << usage->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"TEAM", "SANDBOX TIME", "SANDBOXES", "PEAK MEMORY", "UPLOADED", "DOWNLOADED"}};
  for (const auto& team : (*usage)["teams"]) {
    rows.push_back({team.value("team", ""), hours(team.value("sandboxSeconds", 0.0)),
                    std::to_string(team.value("sandboxesCreated", uint64_t{0})),
                    format_bytes(team.value("peakMemoryBytes", uint64_t{0})),
                    format_bytes(team.value("bytesIn", uint64_t{0})),
                    format_bytes(team.value("bytesOut", uint64_t{0}))});
  }
  std::cout << format_table(rows);
  return 0;
}

}  // namespace

void add_usage(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<UsageOptions>();
  auto* usage = root.add_subcommand("usage", "What teams used: sandbox time, memory, transfers");
  usage->add_option("--team", options->team, "Only this team (default: yours; admin: all)");
  usage->add_option("--since", options->since, "From this day on, YYYY-MM-DD (UTC)");
  usage->add_flag("--json", options->as_json, "The API's JSON");
  commands.push_back({usage, [options] { return run_usage(*options); }});
}

}  // namespace abx::cli
