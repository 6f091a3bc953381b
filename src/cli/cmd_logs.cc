// abx logs ID: the sandbox's log (GET /sandboxes/{id}/logs, E2B's): when it
// was created, timeout changes, and each command started with its end, one
// "time  line" a row. --follow asks again every second for newer lines until
// the sandbox ends (no stream on E2B's route: a poll is what it offers). An
// ended sandbox's log is kept a while, with why it ended.
// The commands' own output is not in it: `abx logs ID PID` shows a
// command's (src/cli/process_logs.h).
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/process_logs.h"
#include "cli/text.h"
#include "common/rfc3339.h"

namespace abx::cli {
namespace {

constexpr auto kFollowInterval = std::chrono::seconds(1);

struct LogsOptions {
  std::string id;
  int pid = 0;  // a command's output instead of the sandbox's log
  bool follow = false;
  bool json = false;
};

// Where the next poll starts, and how many lines of that very millisecond
// were shown already (they come again and are skipped).
struct Cursor {
  int64_t start_ms = 0;
  size_t seen_at_start = 0;
};

Result<json> fetch_entries(const Endpoint& endpoint, const std::string& id, int64_t start_ms) {
  const std::string target =
      "/sandboxes/" + http::url_encode(id) + "/logs?start=" + std::to_string(start_ms);
  auto response = http::Client(endpoint.url).send(api_request(endpoint, "GET", target));
  if (!response) return response.error();
  if (response->status != 200) return Error{describe_failure(*response)};
  return json::parse(response->body).value("logEntries", json::array());
}

// Prints the entries not shown yet and moves the cursor past them.
void print_new(const json& entries, Cursor& cursor, bool as_json) {
  size_t skip = cursor.seen_at_start;
  std::string out;
  for (const auto& entry : entries) {
    const std::string at = entry.value("timestamp", "");
    const int64_t at_ms = parse_rfc3339_ms(at).value_or(cursor.start_ms);
    if (at_ms == cursor.start_ms && skip > 0) {
      --skip;
      continue;
    }
    if (at_ms != cursor.start_ms) cursor = Cursor{at_ms, 0};
    ++cursor.seen_at_start;
    out += as_json
               ? entry.dump() + "\n"
               : sanitize_for_terminal(rfc3339_to_local(at) + "  " + entry.value("message", "")) +
                     "\n";
  }
  std::cout << out << std::flush;
}

// Whether the sandbox is still listed (its log outlives it).
Result<bool> still_running(const Endpoint& endpoint, const std::string& id) {
  auto response = http::Client(endpoint.url)
                      .send(api_request(endpoint, "GET", "/sandboxes/" + http::url_encode(id)));
  if (!response) return response.error();
  if (response->status == 404) return false;
  if (response->status != 200) return Error{describe_failure(*response)};
  return true;
}

Result<int> run_logs(const LogsOptions& options) {
  if (options.pid != 0 && options.json)
    return Error{"--json is for the sandbox's log; a command's output comes as it is"};
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  if (options.pid != 0)
    return show_process_output(*endpoint, options.id, options.pid, options.follow);
  Cursor cursor;
  for (;;) {
    // Asked first, so that the log read next has every line of an ended sandbox.
    auto running = options.follow ? still_running(*endpoint, options.id) : Result<bool>(true);
    if (!running) return running.error();
    auto entries = fetch_entries(*endpoint, options.id, cursor.start_ms);
    if (!entries) {
      if (!*running) {  // ended, and its log is no longer kept
        std::cerr << "abx: sandbox " << options.id << " ended\n";
        return 0;
      }
      return entries.error();
    }
    print_new(*entries, cursor, options.json);
    if (!options.follow) return 0;
    if (!*running) {
      std::cerr << "abx: sandbox " << options.id << " ended\n";
      return 0;
    }
    std::this_thread::sleep_for(kFollowInterval);
  }
}

}  // namespace

void add_logs(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<LogsOptions>();
  auto* app = root.add_subcommand(
      "logs",
      "Show a sandbox's log (its creation, timeout changes, commands and their exits), or with "
      "PID that command's output");
  app->add_option("id", options->id, "Sandbox id")->required();
  app->add_option("pid", options->pid,
                  "A command's pid (abx ps ID): its stdout and stderr from the start instead")
      ->check(CLI::PositiveNumber);
  app->add_flag("-f,--follow", options->follow,
                "Keep printing new lines until the sandbox ends (with PID: until the command "
                "ends, then exit with its exit code)");
  app->add_flag("--json", options->json, "One JSON object a line (E2B's logEntries)");
  commands.push_back({app, [options] { return run_logs(*options); }});
}

}  // namespace abx::cli
