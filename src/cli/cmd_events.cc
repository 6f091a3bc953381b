// abx events ID: a sandbox's flight record (GET /abx/v1/sandboxes/{id}/events),
// one line an event, or its JSON lines as they come (--json, e.g. > run.jsonl);
// -f follows it (the route's server-sent events) until the sandbox ends.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"
#include "common/http_client.h"
#include "common/ids.h"

namespace abx::cli {
namespace {

using nlohmann::json;

std::vector<std::string> row_of(const json& event) {
  return {std::to_string(event.value("seq", uint64_t{0})),
          format_local_time(event.value("at", int64_t{0}) / 1000), event.value("type", ""),
          event.value("event", ""), sanitize_for_terminal(e2b::event_details(event))};
}

Error not_found(const std::string& id) {
  return Error{"no events of sandbox " + id +
               " (unknown, another team's, or ended over a day ago)"};
}

// Each `data:` line of the stream is one event, printed as it comes.
Result<int> follow_events(const std::string& id, const std::string& type, bool as_json) {
  if (!ids::is_valid_sandbox_id(id))
    return Error{"'" + id + "' is not a valid sandbox id: `abx list` shows the ids"};
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  std::string target = "/abx/v1/sandboxes/" + http::url_encode(id) + "/events?follow=1";
  if (!type.empty()) target += "&type=" + http::url_encode(type);
  auto stream = http::Client(endpoint->url).open(api_request(*endpoint, "GET", target));
  if (!stream) return stream.error();
  if ((*stream)->status() == 404) return not_found(id);
  if ((*stream)->status() != 200) {
    auto body = (*stream)->read_all();
    return Error{"could not follow the events of " + id + ": HTTP " +
                 std::to_string((*stream)->status()) + " " + (body ? *body : "")};
  }
  if (!as_json) std::cout << "SEQ  TIME  TYPE  EVENT  DETAILS\n" << std::flush;
  std::string pending;
  while (!(*stream)->done()) {
    auto piece = (*stream)->read_some();
    if (!piece) return piece.error();
    pending += *piece;
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (line.rfind("data: ", 0) != 0) continue;
      const json event = json::parse(line.substr(6), nullptr, false);
      if (!event.is_object()) continue;
      if (as_json) {
        std::cout << line.substr(6) << "\n" << std::flush;
        continue;
      }
      std::string text;
      for (const auto& field : row_of(event)) text += (text.empty() ? "" : "  ") + field;
      std::cout << text << "\n" << std::flush;
    }
  }
  return 0;
}

Result<int> run_events(const std::string& id, const std::string& type, bool as_json, bool follow) {
  if (follow) return follow_events(id, type, as_json);
  auto response =
      get_sandbox_resource(id, "events", type.empty() ? "" : "type=" + http::url_encode(type));
  if (!response) return response.error();
  if (response->status == 404) return not_found(id);
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
    rows.push_back(row_of(event));
  }
  std::cout << format_table(rows);
  return 0;
}

}  // namespace

void add_events(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto type = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto follow = std::make_shared<bool>(false);
  auto* app = root.add_subcommand(
      "events",
      "What happened in a sandbox: its lifecycle, its commands, its files and its network, oldest "
      "first");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_option("--type", *type, "Only lifecycle, commands, files or network events")
      ->check(CLI::IsMember({"lifecycle", "commands", "files", "network"}));
  app->add_flag("--json", *as_json, "Print the events as JSON lines (to replay or keep them)");
  app->add_flag("-f,--follow", *follow, "Keep printing new events as they happen, until it ends");
  commands.push_back(
      {app, [id, type, as_json, follow] { return run_events(*id, *type, *as_json, *follow); }});
}

}  // namespace abx::cli
