// GET /abx/v1/sandboxes/{id}/events: a sandbox's flight record
// (event_journal.h), live or ended within the retention, its team's only;
// with follow=1 as server-sent events, each new one as it is recorded,
// until the sandbox ends.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>

#include "common/json_text.h"
#include "daemon/authentication.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

constexpr const char* kTypes[] = {"lifecycle", "commands", "files", "network"};
// A follower looks for new events this often (a stat of the journal), and
// sends a comment when nothing came for kKeepalive, so proxies keep it open.
constexpr auto kFollowTick = std::chrono::milliseconds(250);
constexpr auto kKeepalive = std::chrono::seconds(15);

struct EventsQuery {
  uint64_t after = 0;
  std::string type;
  bool follow = false;
};

Result<uint64_t> parse_seq(const std::string& text, const char* what) {
  uint64_t seq = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seq);
  if (ec != std::errc{} || end != text.data() + text.size())
    return Error::with_message(std::string(what) + ": the seq of the last event you have, e.g. 42",
                               kErrBadInput);
  return seq;
}

// `since` (or, on a follower's reconnect, its Last-Event-ID), `type`, `follow`.
Result<EventsQuery> parse_events_query(const http::Request& request) {
  EventsQuery out;
  const auto& query = request.query;
  if (const auto it = query.find("since"); it != query.end()) {
    auto seq = parse_seq(it->second, "since");
    if (!seq) return seq.error();
    out.after = *seq;
  }
  if (const std::string last = request.header("last-event-id"); !last.empty()) {
    auto seq = parse_seq(last, "Last-Event-ID");
    if (!seq) return seq.error();
    out.after = std::max(out.after, *seq);
  }
  if (const auto it = query.find("type"); it != query.end()) {
    out.type = it->second;
    if (std::find(std::begin(kTypes), std::end(kTypes), out.type) == std::end(kTypes))
      return Error::with_message("type: lifecycle, commands, files or network", kErrBadInput);
  }
  if (const auto it = query.find("follow"); it != query.end()) {
    if (it->second != "1" && it->second != "true" && it->second != "0" && it->second != "false")
      return Error::with_message("follow: 1 or 0", kErrBadInput);
    out.follow = it->second == "1" || it->second == "true";
  }
  return out;
}

Task<Result<std::vector<nlohmann::json>>> read_events(ControlCall& call, const std::string& id,
                                                      const EventsQuery& query) {
  Result<std::vector<nlohmann::json>> events = std::vector<nlohmann::json>{};
  co_await call.service.pool().run(
      [&] { events = call.service.events().read(id, call.caller.team, query.after, query.type); });
  co_return events;
}

// One server-sent event: its seq as the id a reconnect sends back.
std::string sse(const nlohmann::json& event) {
  return "id: " + std::to_string(event.value("seq", uint64_t{0})) +
         "\nevent: " + event.value("type", std::string()) + "\ndata: " + json_text::dump(event) +
         "\n\n";
}

const std::vector<nlohmann::json> kNoEvents;

bool is_the_end(const nlohmann::json& event) {
  return event.value("type", "") == "lifecycle" && event.value("event", "") == "ended";
}

// The record so far, then each new event, until the sandbox's `ended` (or,
// for a sandbox no longer live, once nothing more comes), the client going
// away, or its key being revoked.
// `so_far` is what the route read already, at journal stamp `so_far_stamp`
// (taken before that read, so nothing recorded meanwhile is missed).
Task<void> follow_events(ControlCall& call, Exchange& exchange, const std::string& id,
                         EventsQuery query, std::vector<nlohmann::json> so_far,
                         uint64_t so_far_stamp) {
  http::Headers headers = {{"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}};
  std::string type = "text/event-stream";
  co_await exchange.start_stream(200, std::move(type), std::move(headers));
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  uint64_t seen_stamp = so_far_stamp;
  auto quiet_since = std::chrono::steady_clock::now();
  for (bool first = true;; first = false) {
    const uint64_t stamp = first ? so_far_stamp : call.service.events().stamp(id);
    if (first || stamp != seen_stamp) {
      seen_stamp = stamp;
      Result<std::vector<nlohmann::json>> events = std::move(so_far);
      if (!first) events = co_await read_events(call, id, query);
      std::string out;
      bool ended = false;
      for (const auto& event : events ? *events : kNoEvents) {
        out += sse(event);
        query.after = std::max(query.after, event.value("seq", uint64_t{0}));
        ended = ended || is_the_end(event);
      }
      if (!out.empty()) {
        quiet_since = std::chrono::steady_clock::now();
        if (!co_await exchange.write_chunk(std::move(out))) co_return;
      }
      if (ended) break;
    }
    if (!call.service.find_for(call.caller, id) && !first) break;  // gone without an `ended`
    if (std::chrono::steady_clock::now() - quiet_since > kKeepalive) {
      quiet_since = std::chrono::steady_clock::now();
      std::string keepalive = ": keepalive\n\n";
      if (!co_await exchange.write_chunk(std::move(keepalive))) co_return;
      if (!caller_of(exchange.request(), {call.service.keys(), call.service.dashboard_sessions()}))
        break;  // its key was revoked
    }
    timer.expires_after(kFollowTick);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
  co_await exchange.finish_stream();
}

}  // namespace

Task<void> sandbox_events(ControlCall& call, Exchange& exchange) {
  auto id = id_param(call);
  if (!id) co_return co_await respond_error(exchange, id.error());
  auto query = parse_events_query(exchange.request());
  if (!query) co_return co_await respond_error(exchange, query.error());
  const uint64_t stamp = query->follow ? call.service.events().stamp(*id) : 0;
  auto events = co_await read_events(call, *id, *query);
  if (!events) co_return co_await respond_error(exchange, events.error());
  if (query->follow)
    co_return co_await follow_events(call, exchange, *id, *query, std::move(*events), stamp);
  std::string body;
  for (const auto& event : *events) body += json_text::dump(event) + "\n";
  co_await exchange.respond(200, "application/x-ndjson", std::move(body));
}

}  // namespace abx::daemon::routes
