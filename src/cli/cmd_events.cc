// abx events ID: a sandbox's flight record (GET /abx/v1/sandboxes/{id}/events),
// one line an event, or its JSON lines as they come (--json, e.g. > run.jsonl).
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"
#include "common/http_client.h"

namespace abx::cli {
namespace {

using nlohmann::json;

// "argv=[...] exitCode=0": the fields an event has beyond its seq, time, type and name.
std::string details_of(const json& event) {
  std::string out;
  for (const auto& [key, value] : event.items()) {
    if (key == "seq" || key == "at" || key == "type" || key == "event") continue;
    if (value.is_null() || (value.is_string() && value.get<std::string>().empty())) continue;
    out += (out.empty() ? "" : " ") + key + "=" +
           (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

Result<int> run_events(const std::string& id, const std::string& type, bool as_json) {
  auto response =
      get_sandbox_resource(id, "events", type.empty() ? "" : "type=" + http::url_encode(type));
  if (!response) return response.error();
  if (response->status == 404)
    return Error{"no events of sandbox " + id +
                 " (unknown, another team's, or ended over a day ago)"};
  if (response->status != 200)
    return Error{"could not read the events of " + id + ": " + describe_failure(*response)};
  if (as_json) {
    std::cout << response->body;
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"SEQ", "TIME", "TYPE", "EVENT", "DETAILS"}};
  size_t start = 0;
  while (start < response->body.size()) {
    size_t end = response->body.find('\n', start);
    if (end == std::string::npos) end = response->body.size();
    const json event = json::parse(response->body.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (!event.is_object()) continue;
    rows.push_back({std::to_string(event.value("seq", uint64_t{0})),
                    format_local_time(event.value("at", int64_t{0}) / 1000),
                    event.value("type", ""), event.value("event", ""),
                    sanitize_for_terminal(details_of(event))});
  }
  std::cout << format_table(rows);
  return 0;
}

}  // namespace

void add_events(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto type = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto* app = root.add_subcommand(
      "events", "What happened in a sandbox: its lifecycle and its commands, oldest first");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_option("--type", *type, "Only lifecycle or commands events")
      ->check(CLI::IsMember({"lifecycle", "commands"}));
  app->add_flag("--json", *as_json, "Print the events as JSON lines (to replay or keep them)");
  commands.push_back({app, [id, type, as_json] { return run_events(*id, *type, *as_json); }});
}

}  // namespace abx::cli
