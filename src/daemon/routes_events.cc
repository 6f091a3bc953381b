// GET /abx/v1/sandboxes/{id}/events: a sandbox's flight record
// (event_journal.h), live or ended within the retention, its team's only.
#include <algorithm>
#include <charconv>

#include "common/json_text.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

constexpr const char* kTypes[] = {"lifecycle", "commands"};

struct EventsQuery {
  uint64_t after = 0;
  std::string type;
};

Result<EventsQuery> parse_events_query(const std::map<std::string, std::string>& query) {
  EventsQuery out;
  if (const auto it = query.find("since"); it != query.end()) {
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out.after);
    if (ec != std::errc{} || end != text.data() + text.size())
      return Error::with_message("since: the seq of the last event you have, e.g. since=42",
                                 kErrBadInput);
  }
  if (const auto it = query.find("type"); it != query.end()) {
    out.type = it->second;
    if (std::find(std::begin(kTypes), std::end(kTypes), out.type) == std::end(kTypes))
      return Error::with_message("type: lifecycle or commands", kErrBadInput);
  }
  return out;
}

}  // namespace

Task<void> sandbox_events(ControlCall& call, Exchange& exchange) {
  auto id = id_param(call);
  if (!id) co_return co_await respond_error(exchange, id.error());
  auto query = parse_events_query(exchange.request().query);
  if (!query) co_return co_await respond_error(exchange, query.error());
  Result<std::vector<nlohmann::json>> events = std::vector<nlohmann::json>{};
  co_await call.service.pool().run([&] {
    events = call.service.events().read(*id, call.caller.team, query->after, query->type);
  });
  if (!events) co_return co_await respond_error(exchange, events.error());
  std::string body;
  for (const auto& event : *events) body += json_text::dump(event) + "\n";
  co_await exchange.respond(200, "application/x-ndjson", std::move(body));
}

}  // namespace abx::daemon::routes
