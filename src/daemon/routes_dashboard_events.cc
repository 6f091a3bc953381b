// GET /dashboard/events: the dashboard's live feed, as server-sent events.
// Once a second it compares the caller's sandboxes with what it last sent:
// a new or changed one is a `sandbox` event, a gone one `ended`; every other
// second a `metrics` event carries each sandbox's newest sample. The page
// keeps no timer of its own. An admin's feed has every team's sandboxes, each
// with its owner (the page acts only on its own team's: the API does). A page
// that got the snapshot from GET /dashboard/bootstrap names its digest
// (?have=), and the feed leaves it out if nothing changed since.
#include <spdlog/fmt/fmt.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>
#include <map>

#include "daemon/authentication.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr auto kTick = std::chrono::seconds(1);
constexpr int kMetricsEveryTicks = 2;
constexpr int kKeepaliveEveryTicks = 15;  // a comment line, so idle proxies keep the stream

std::string event(std::string_view name, const json& data) {
  return "event: " + std::string(name) + "\ndata: " + data.dump() + "\n\n";
}

std::vector<SandboxRow> shown_rows(Service& service, const Caller& caller) {
  return caller.admin ? service.list() : service.list_for(caller);
}

std::map<std::string, json> listings(Service& service, const Caller& caller) {
  std::map<std::string, json> out;
  for (const SandboxRow& row : shown_rows(service, caller)) {
    json listing = sandbox_listing(row);
    listing["owner"] = row.owner;
    out[row.id] = std::move(listing);
  }
  return out;
}

// The events that turn what the page was sent into what is live now.
std::string changes(const std::map<std::string, json>& sent,
                    const std::map<std::string, json>& now) {
  std::string out;
  for (const auto& [id, listing] : now) {
    const auto it = sent.find(id);
    if (it == sent.end() || it->second != listing) out += event("sandbox", listing);
  }
  for (const auto& [id, listing] : sent) {
    if (!now.contains(id)) out += event("ended", json{{"sandboxID", id}});
  }
  return out;
}

std::string metrics(Service& service, const Caller& caller,
                    const std::map<std::string, json>& shown) {
  json out = json::object();
  for (const auto& [id, listing] : shown) {
    auto live = caller.admin ? service.find(id) : service.find_for(caller, id);
    if (live) out[id] = sandbox_metric(*live);
  }
  return event("metrics", out);
}

// The snapshot as JSON text (an array of the listings), serialized once: the
// bootstrap's answer and the feed's first event carry the same text.
std::string snapshot_text(const std::map<std::string, json>& shown) {
  std::string out = "[";
  for (const auto& [id, listing] : shown) {
    if (out.size() > 1) out += ',';
    out += listing.dump();
  }
  return out + "]";
}

// The same daemon compares two of its own snapshots for one caller: a hash of
// the text, not a cryptographic one (the caller names only what it holds).
std::string digest_of(std::string_view text) {
  return fmt::format("{:016x}", std::hash<std::string_view>{}(text));
}

// The feed's first lines: the snapshot, unless the page holds it already
// (GET /dashboard/bootstrap gave it, and its digest is still the one now).
std::string first_lines(const std::map<std::string, json>& shown, const http::Request& request) {
  std::string text = snapshot_text(shown);
  const auto have = request.query.find("have");
  const bool held = have != request.query.end() && have->second == digest_of(text);
  if (held) return "retry: 2000\n\n";
  return "retry: 2000\n\nevent: snapshot\ndata: " + text + "\n\n";
}

// The caller is asked for again at every tick: a logout, an expired session
// or a revoked key ends the feed.
bool still_admitted(Service& service, const http::Request& request) {
  return caller_of(request, {service.keys(), service.dashboard_sessions()}).has_value();
}

}  // namespace

FeedSnapshot dashboard_feed_snapshot(Service& service, const Caller& caller) {
  std::string text = snapshot_text(listings(service, caller));
  std::string digest = digest_of(text);
  return {std::move(text), std::move(digest)};
}

Task<void> dashboard_events(ControlCall& call, Exchange& exchange) {
  // Arguments are built before each co_await (g++ 12 and temporaries there).
  http::Headers headers = {{"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}};
  std::string type = "text/event-stream";
  co_await exchange.start_stream(200, std::move(type), std::move(headers));
  std::map<std::string, json> shown = listings(call.service, call.caller);
  std::string first = first_lines(shown, exchange.request());
  if (!co_await exchange.write_chunk(std::move(first))) co_return;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  for (int tick = 1;; ++tick) {
    timer.expires_after(kTick);
    co_await timer.async_wait(boost::asio::use_awaitable);
    if (!still_admitted(call.service, exchange.request())) break;
    auto now = listings(call.service, call.caller);
    std::string out = changes(shown, now);
    shown = std::move(now);
    if (tick % kMetricsEveryTicks == 0 && !shown.empty())
      out += metrics(call.service, call.caller, shown);
    if (out.empty() && tick % kKeepaliveEveryTicks == 0) out = ": keepalive\n\n";
    if (!out.empty() && !co_await exchange.write_chunk(std::move(out))) co_return;
  }
  co_await exchange.finish_stream();
}

}  // namespace abx::daemon::routes
