// abx stats [ID...] (alias metrics): each sandbox's CPU, memory and disk use,
// the newest reading of GET /sandboxes/{id}/metrics (E2B's metrics); no id
// means every sandbox. --watch redraws every two seconds until Ctrl-C or, for
// sandboxes named, until they have all ended (a note says why, exit 0).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/sandbox_end.h"
#include "cli/terminal.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

constexpr auto kWatchInterval = std::chrono::seconds(2);
// Enough history to hold a reading whatever the sampler's pace.
constexpr int64_t kLookBackSeconds = 60;

struct StatsOptions {
  std::vector<std::string> ids;
  bool json = false;
  bool watch = false;
};

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The newest reading of one sandbox, with its id; none when it is not found.
Result<std::optional<json>> latest(const ControlPlane& control, const std::string& id) {
  const std::string target = "/sandboxes/" + http::url_encode(id) +
                             "/metrics?start=" + std::to_string(now_seconds() - kLookBackSeconds);
  auto response =
      http::Client(control.endpoint().url).send(api_request(control.endpoint(), "GET", target));
  if (!response) return response.error();
  if (response->status == 404) return std::optional<json>();
  if (response->status != 200) return Error{describe_failure(*response)};
  const json samples = json::parse(response->body);
  json reading = samples.is_array() && !samples.empty() ? samples.back() : json::object();
  reading["sandboxID"] = id;
  return std::optional<json>(std::move(reading));
}

std::string percent(double value) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", value);
  return text;
}

std::string used_of(const json& reading, const char* used, const char* total) {
  const auto in_use = reading.value(used, std::uint64_t{0});
  const auto limit = reading.value(total, std::uint64_t{0});
  std::string out = format_bytes(in_use) + " / " + format_bytes(limit);
  if (limit > 0)
    out += " (" + percent(100.0 * static_cast<double>(in_use) / static_cast<double>(limit)) + ")";
  return out;
}

// Docker's NET I/O: received / sent since the sandbox started.
std::string net_io(const json& reading) {
  return format_bytes(reading.value("netRxBytes", uint64_t{0})) + " / " +
         format_bytes(reading.value("netTxBytes", uint64_t{0}));
}

std::vector<std::string> row(const json& reading) {
  return {reading.value("sandboxID", ""),
          percent(reading.value("cpuUsedPct", 0.0)),
          std::to_string(reading.value("cpuCount", 0)),
          used_of(reading, "memUsed", "memTotal"),
          used_of(reading, "diskUsed", "diskTotal"),
          net_io(reading)};
}

Result<std::vector<std::string>> targets(const ControlPlane& control, const StatsOptions& options) {
  if (!options.ids.empty()) return options.ids;
  auto sandboxes = control.list_sandboxes();
  if (!sandboxes) return sandboxes.error();
  std::vector<std::string> ids;
  for (const auto& sandbox : *sandboxes) ids.push_back(sandbox.value("sandboxID", ""));
  return ids;
}

// The sandboxes named on the command line that --watch still follows: one
// that ended after a reading drops out with a note; one never read is an error.
struct Watched {
  std::vector<std::string> ids;
  std::set<std::string> seen;
};

void note_ended(const ControlPlane& control, const std::string& id) {
  const auto why = sandbox_end_reason(control.endpoint(), id);
  std::cerr << "abx: sandbox " << id << " has ended"
            << (why && !why->empty() ? " (" + *why + ")" : "") << "; no more readings of it\n";
}

// One reading of every target; a sandbox that is not found is an error unless
// --watch read it before (it ended: noted and dropped) or watches every sandbox.
Result<json> readings(const ControlPlane& control, const StatsOptions& options, Watched& watched) {
  auto ids = options.ids.empty() ? targets(control, options) : watched.ids;
  if (!ids) return ids.error();
  json out = json::array();
  for (const auto& id : *ids) {
    auto reading = latest(control, id);
    if (!reading) return reading.error();
    if (*reading) {
      out.push_back(**reading);
      watched.seen.insert(id);
    } else if (options.watch && options.ids.empty()) {
      continue;  // it ended between the list and its reading
    } else if (options.watch && watched.seen.contains(id)) {
      note_ended(control, id);
      std::erase(watched.ids, id);
    } else {
      return Error::with_message("sandbox " + id + " not found", ENOENT);
    }
  }
  return out;
}

std::string table(const json& all) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "CPU %", "CPUS", "MEMORY", "DISK", "NET I/O"}};
  for (const auto& reading : all) rows.push_back(row(reading));
  return format_table(rows);
}

Result<int> run_stats(const StatsOptions& options) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const ControlPlane control(*endpoint);
  const bool redraw = options.watch && terminal::is_tty(STDOUT_FILENO);
  Watched watched{options.ids, {}};
  for (;;) {
    auto all = readings(control, options, watched);
    if (!all) return all.error();
    if (!options.ids.empty() && watched.ids.empty()) return 0;  // every one named has ended
    if (options.json) {
      std::cout << (options.watch ? all->dump() : all->dump(2)) << "\n";
    } else {
      std::cout << (redraw ? "\x1b[H\x1b[2J" : "") << table(*all);
    }
    std::cout.flush();
    if (!options.watch) return 0;
    std::this_thread::sleep_for(kWatchInterval);
  }
}

}  // namespace

void add_stats(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<StatsOptions>();
  auto* app = root.add_subcommand(
      "stats", "Show sandboxes' CPU, memory and disk use (alias: metrics; no id: all)");
  app->alias("metrics");
  app->add_option("ids", options->ids, "Sandbox ids (default: every sandbox)");
  app->add_flag("--json", options->json, "Print the readings as JSON (E2B's metric fields)");
  app->add_flag("-w,--watch", options->watch,
                "Show a new reading every 2 s until Ctrl-C or the sandboxes named have ended");
  commands.push_back({app, [options] { return run_stats(*options); }});
}

}  // namespace abx::cli
