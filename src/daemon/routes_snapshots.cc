// E2B's snapshots and fork: POST /sandboxes/{id}/snapshots, GET /snapshots,
// DELETE /templates/{snapshotID} (E2B's snapshots are templates; only
// snapshot ids are deleted there), POST /sandboxes/{id}/fork.
#include <algorithm>

#include "common/ids.h"
#include "common/json_text.h"
#include "daemon/codec.h"
#include "daemon/control_requests.h"
#include "daemon/error_map.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr size_t kDefaultPage = 100;
constexpr size_t kMaxPage = 1000;

json snapshot_json(const Snapshot& snapshot) {
  json names = json::array();
  if (!snapshot.name.empty()) names.push_back(snapshot.name);
  // E2B's two fields, then what `abx snapshot list` shows (E2B's SDKs keep
  // fields they do not know as additional properties).
  const int64_t ms = snapshot.created_ms;
  return {{"snapshotID", snapshot.id},
          {"names", names},
          {"sandboxID", snapshot.sandbox_id},
          {"templateID", snapshot.root.template_id},
          {"createdAt", codec::rfc3339(ms / 1000, (ms % 1000) * 1000000, true)},
          {"sizeBytes", snapshot.size_bytes}};
}

// The caller's live sandbox {id}, or the error to answer.
Result<std::shared_ptr<LiveSandbox>> live_of(ControlCall& call) {
  const std::string& id = call.params.at("id");
  if (!ids::is_valid_sandbox_id(id)) return sandbox_not_found(id);
  if (auto live = call.service.find_for(call.caller, id)) return live;
  if (call.service.dormant_for(call.caller, id))
    return Error::with_message(
        "sandbox " + id + " is paused (filesystem only): resume it first (connect)", EBUSY);
  return sandbox_not_found(id);
}

Result<size_t> page_limit(const std::map<std::string, std::string>& query) {
  const auto it = query.find("limit");
  if (it == query.end()) return kDefaultPage;
  try {
    size_t used = 0;
    const unsigned long value = std::stoul(it->second, &used);
    if (used == it->second.size() && value >= 1 && value <= kMaxPage) return size_t{value};
  } catch (const std::exception&) {
  }
  return Error::with_message("limit: must be an integer from 1 to 1000", kErrBadInput);
}

std::string query_value(const std::map<std::string, std::string>& query, const char* key) {
  const auto it = query.find(key);
  return it == query.end() ? std::string() : it->second;
}

}  // namespace

Task<void> sandbox_snapshot_create(ControlCall& call, Exchange& exchange) {
  auto live = live_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto doc = json_text::parse_object(body->empty() ? std::string_view("{}") : *body);
  if (!doc) co_return co_await respond_error(exchange, doc.error());
  std::string name;
  if (const auto it = doc->find("name"); it != doc->end() && !it->is_null()) {
    if (!it->is_string())
      co_return co_await respond_error(exchange,
                                       Error::with_message("name: must be a string", kErrBadInput));
    name = it->get<std::string>();
  }
  auto snapshot = co_await call.service.create_snapshot(*live, std::move(name));
  if (!snapshot) co_return co_await respond_error(exchange, snapshot.error());
  co_await respond_json(exchange, 201, snapshot_json(*snapshot));
}

// Newest first; ?sandboxID= and ?name= filter, ?limit= and ?nextToken=
// (the id of the first snapshot of the page, from X-Next-Token) page.
Task<void> snapshots_list(ControlCall& call, Exchange& exchange) {
  const auto& query = exchange.request().query;
  auto limit = page_limit(query);
  if (!limit) co_return co_await respond_error(exchange, limit.error());
  const std::string sandbox_id = query_value(query, "sandboxID");
  const std::string name = query_value(query, "name");
  const std::string next = query_value(query, "nextToken");
  std::vector<Snapshot> snapshots = call.service.snapshots().list_for(call.caller.team);
  std::erase_if(snapshots, [&](const Snapshot& s) {
    return (!sandbox_id.empty() && s.sandbox_id != sandbox_id) || (!name.empty() && s.name != name);
  });
  std::sort(snapshots.begin(), snapshots.end(), [](const Snapshot& a, const Snapshot& b) {
    return std::tie(b.created_ms, b.id) < std::tie(a.created_ms, a.id);
  });
  auto first = snapshots.begin();
  if (!next.empty())
    first = std::find_if(snapshots.begin(), snapshots.end(),
                         [&](const Snapshot& s) { return s.id == next; });
  json out = json::array();
  http::Headers headers;
  for (auto it = first; it != snapshots.end(); ++it) {
    if (out.size() == *limit) {
      headers.emplace_back("X-Next-Token", it->id);
      break;
    }
    out.push_back(snapshot_json(*it));
  }
  co_await respond_json(exchange, 200, out, std::move(headers));
}

Task<void> snapshot_delete(ControlCall& call, Exchange& exchange) {
  const std::string& id = call.params.at("id");
  Result<bool> removed = false;
  if (SnapshotStore::is_snapshot_id(id))
    co_await call.service.pool().run(
        [&] { removed = call.service.delete_snapshot(call.caller, id); });
  if (!removed) co_return co_await respond_error(exchange, removed.error());
  if (!*removed)
    co_return co_await respond_error(
        exchange, Error::with_message("snapshot " + id +
                                          " not found (templates are removed with `abx template "
                                          "rm`)",
                                      ENOENT));
  co_await exchange.respond(204, "", "");
}

Task<void> sandbox_fork(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = parse_fork(*body);
  if (!request) co_return co_await respond_error(exchange, request.error());
  auto live = live_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  auto forks = co_await call.service.fork(*live, request->count, request->timeout_sec, call.caller);
  if (!forks) co_return co_await respond_error(exchange, forks.error());
  json out = json::array();
  for (Result<SandboxRow>& fork : *forks) {
    if (fork) {
      out.push_back({{"sandbox", sandbox_created(*fork)}});
      continue;
    }
    const int status = error_map::http_status(fork.error());
    out.push_back({{"error", error_json(status, fork.error().message())}});
  }
  co_await respond_json(exchange, 201, out);
}

}  // namespace abx::daemon::routes
