// GET /abx/v1/sandboxes/ended: the caller's team's sandboxes that ended
// within the retention of their flight record (ended_sandboxes.h), each with
// when it started and ended and why (the `ended` event: killed by which key,
// its timeout, out of memory...). Their timelines stay at
// /abx/v1/sandboxes/{id}/events.
#include <charconv>
#include <set>

#include "common/clock.h"
#include "daemon/codec.h"
#include "daemon/ended_sandboxes.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr size_t kMaxListed = 1000;

json time_or_null(int64_t unix_ms) {
  if (unix_ms <= 0) return nullptr;
  return codec::rfc3339(unix_ms / 1000, (unix_ms % 1000) * 1000000, true);
}

// `limit`: 1..kMaxListed, kMaxListed when absent.
Result<size_t> parse_limit(const http::Request& request) {
  const auto it = request.query.find("limit");
  if (it == request.query.end()) return kMaxListed;
  const std::string& text = it->second;
  size_t limit = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
  if (ec != std::errc{} || end != text.data() + text.size() || limit < 1 || limit > kMaxListed)
    return Error::with_message("limit: a whole number from 1 to " + std::to_string(kMaxListed),
                               kErrBadInput);
  return limit;
}

json ended_json(const EndedSandbox& ended) {
  const json& created = ended.created;
  const json& end = ended.ended;
  auto field = [](const json& event, const char* name) {
    return event.contains(name) ? event[name] : json(nullptr);
  };
  return {{"sandboxID", ended.id},
          {"templateID", field(created, "template")},
          {"alias", field(created, "asked")},
          {"cpuCount", field(created, "cpuCount")},
          {"memoryMB", field(created, "memoryMB")},
          {"startedAt", time_or_null(created.value("at", int64_t{0}))},
          {"endedAt", time_or_null(ended.ended_ms)},
          {"why", field(end, "why")},
          {"key", field(end, "key")},
          {"keyName", field(end, "keyName")}};
}

}  // namespace

Task<void> sandboxes_ended(ControlCall& call, Exchange& exchange) {
  auto limit = parse_limit(exchange.request());
  if (!limit) co_return co_await respond_error(exchange, limit.error());
  std::set<std::string> live;
  for (const SandboxRow& row : call.service.list_for(call.caller)) live.insert(row.id);
  EndedSandboxes ended;
  co_await call.service.pool().run([&] {
    ended = list_ended(call.service.events(), call.caller.team, live, *limit, unix_ms_now());
  });
  // Built before the co_await (g++ 12 and a braced temporary in its arguments).
  json body = {{"sandboxes", json::array()}, {"truncated", ended.truncated}};
  for (const EndedSandbox& one : ended.sandboxes) body["sandboxes"].push_back(ended_json(one));
  co_await respond_json(exchange, 200, body);
}

}  // namespace abx::daemon::routes
