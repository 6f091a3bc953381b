// sandbox_events: a sandbox's flight record (the daemon's GET
// /abx/v1/sandboxes/{id}/events), so an agent can review what it did there.
// A page at a time: the events from `since` on that fit the text limit, and
// the seq to ask again with.
#include <ctime>

#include "common/http_client.h"
#include "mcp/text_limits.h"
#include "mcp/tools.h"

namespace abx::mcp::tools {
namespace {

// An agent reads the text: a page of events it can take in, and a line per
// event that one huge argv cannot blow up.
constexpr size_t kMaxEvents = 200;
constexpr size_t kMaxDetailBytes = 400;
// structuredContent keeps every field, but no string past this.
constexpr size_t kMaxFieldBytes = 2000;

// "2026-12-05T17:16:15.123Z" from unix milliseconds.
std::string utc_time(int64_t at_ms) {
  const std::time_t seconds = at_ms / 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03dZ", static_cast<int>(at_ms % 1000));
  return std::string(text) + millis;
}

std::string details_of(const json& event) {
  return shorten(e2b::event_details(event), kMaxDetailBytes);
}

std::string line_of(const json& event) {
  return std::to_string(event.value("seq", uint64_t{0})) + "  " +
         utc_time(event.value("at", int64_t{0})) + "  " + event.value("type", "") + "  " +
         event.value("event", "") + "  " + details_of(event) + "\n";
}

json with_short_strings(const json& value) {
  if (value.is_string()) return shorten(value.get<std::string>(), kMaxFieldBytes);
  if (!value.is_structured()) return value;
  json out = value;
  for (auto& item : out) item = with_short_strings(item);
  return out;
}

std::string query_of(const json& args) {
  std::string query;
  if (const auto it = args.find("since"); it != args.end())
    query = "since=" + std::to_string(it->get<uint64_t>());
  if (const std::string type = string_arg(args, "type"); !type.empty())
    query += (query.empty() ? "type=" : "&type=") + http::url_encode(type);
  return query;
}

std::string what_was_asked(const std::string& id, const json& args) {
  std::string text = "sandbox " + id;
  if (const std::string type = string_arg(args, "type"); !type.empty())
    text += " (" + type + " only)";
  if (args.contains("since")) text += " after seq " + std::to_string(args["since"].get<uint64_t>());
  return text;
}

}  // namespace

ToolResult sandbox_events(Call& call) {
  const std::string id = string_arg(call.args, "sandbox_id");
  auto events = call.box.control().sandbox_events(id, query_of(call.args));
  if (!events) {
    return ToolResult::failure(events.error().message() +
                               "; sandbox_list shows the sandboxes that exist");
  }
  ToolResult result;
  json shown = json::array();
  std::string lines;
  for (const auto& event : *events) {
    std::string line = line_of(event);
    if (shown.size() == kMaxEvents || lines.size() + line.size() > kMaxOutputBytes) break;
    lines += line;
    shown.push_back(with_short_strings(event));
  }
  const size_t left = events->size() - shown.size();
  result.structured = {{"sandbox_id", id}, {"events", shown}, {"more", left > 0}};
  if (shown.empty()) {
    result.text = "No events of " + what_was_asked(id, call.args) + ".";
    return result;
  }
  const uint64_t last = shown.back().value("seq", uint64_t{0});
  result.structured["next_since"] = last;
  result.text = std::to_string(shown.size()) + " event(s) of " + what_was_asked(id, call.args) +
                ", oldest first:\nSEQ  TIME (UTC)  TYPE  EVENT  DETAILS\n" + lines;
  result.text += left > 0 ? "[more events after these: call sandbox_events again with since=" +
                                std::to_string(last) + "]"
                          : "[the end of the record so far; since=" + std::to_string(last) +
                                " asks for what comes next]";
  return result;
}

}  // namespace abx::mcp::tools
