// Control plane: E2B's /sandboxes resource (spec/e2b-protocol.md §5, shapes §6).
#include <algorithm>

#include "common/ids.h"
#include "daemon/codec.h"
#include "daemon/control_requests.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

std::string time_text(int64_t unix_ms) {
  return codec::rfc3339(unix_ms / 1000, (unix_ms % 1000) * 1000000, true);
}

json sandbox_json(const SandboxRow& row) {
  json out = {{"templateID", row.template_id}, {"sandboxID", row.id}, {"clientID", kClientId},
              {"envdVersion", kEnvdVersion},   {"alias", row.alias},  {"domain", nullptr}};
  if (!row.access_token.empty()) out["envdAccessToken"] = row.access_token;
  return out;
}

json listed_json(const SandboxRow& row) {
  return {{"templateID", row.template_id},
          {"alias", row.alias},
          {"sandboxID", row.id},
          {"clientID", kClientId},
          {"startedAt", time_text(row.started_at_ms)},
          {"endAt", time_text(row.end_at_ms)},
          {"cpuCount", row.cpu_count},
          {"memoryMB", row.memory_mb},
          {"diskSizeMB", row.disk_size_mb},
          {"state", "running"},
          {"envdVersion", kEnvdVersion},
          {"metadata", row.metadata}};
}

json detail_json(const SandboxRow& row) {
  json out = listed_json(row);
  if (!row.access_token.empty()) out["envdAccessToken"] = row.access_token;
  out["allowInternetAccess"] = row.allow_internet_access;
  out["domain"] = nullptr;
  out["lifecycle"] = {{"autoResume", false}, {"onTimeout", "kill"}};
  return out;
}

bool matches(const SandboxRow& row, const ListSandboxesQuery& query) {
  for (const auto& [key, value] : query.metadata) {
    const auto it = row.metadata.find(key);
    if (it == row.metadata.end() || it->second != value) return false;
  }
  // Every sandbox we hold is running.
  return query.states.empty() ||
         std::find(query.states.begin(), query.states.end(), "running") != query.states.end();
}

Task<void> list(Service& service, Exchange& exchange, bool paginated) {
  auto query = parse_list_query(exchange.request().query);
  if (!query) co_return co_await respond_error(exchange, 400, query.error().message());
  std::vector<SandboxRow> rows = service.list();
  std::erase_if(rows, [&](const SandboxRow& row) { return !matches(row, *query); });
  std::sort(rows.begin(), rows.end(), [](const SandboxRow& a, const SandboxRow& b) {
    return std::tie(a.started_at_ms, a.id) < std::tie(b.started_at_ms, b.id);
  });
  auto first = rows.begin();
  if (paginated && !query->next_token.empty()) {
    first = std::find_if(rows.begin(), rows.end(),
                         [&](const SandboxRow& row) { return row.id == query->next_token; });
  }
  json out = json::array();
  http::Headers headers;
  for (auto it = first; it != rows.end(); ++it) {
    if (paginated && out.size() == query->limit) {
      headers.emplace_back("X-Next-Token", it->id);
      break;
    }
    out.push_back(listed_json(*it));
  }
  co_await respond_json(exchange, 200, out, std::move(headers));
}

Task<void> create(Service& service, Exchange& exchange, bool always_secure) {
  bool fits = true;
  const std::string body = co_await http::read_body(exchange, 1 << 20, &fits);
  if (!fits) co_return co_await respond_error(exchange, 400, "body: larger than 1 MiB");
  auto request = parse_create_sandbox(body, service.host_cores());
  if (!request) co_return co_await respond_error(exchange, 400, request.error().message());
  request->secure = request->secure || always_secure;
  auto created = co_await service.create(std::move(*request));
  if (auto* failure = std::get_if<ServiceError>(&created)) {
    co_return co_await respond_error(exchange, failure->status, failure->message);
  }
  co_await respond_json(exchange, 201, sandbox_json(std::get<SandboxRow>(created)));
}

bool body_has_timeout(const std::string& body) {
  const json doc = json::parse(body.empty() ? std::string("{}") : body, nullptr, false);
  return !doc.is_object() || doc.contains("timeout");
}

Task<void> set_timeout(Service& service, Exchange& exchange, const std::string& id,
                       bool is_connect) {
  bool fits = true;
  const std::string body = co_await http::read_body(exchange, 1 << 16, &fits);
  // v2 connect may omit the timeout: then the end time stays as it is.
  const bool keep_end = is_connect && fits && !body_has_timeout(body);
  auto seconds = keep_end ? Result<int>(0) : parse_timeout_body(fits ? body : std::string());
  if (!seconds) co_return co_await respond_error(exchange, 400, seconds.error().message());
  auto row = service.set_timeout(id, *seconds, is_connect);
  if (!row) co_return co_await respond_error(exchange, 404, "sandbox " + id + " not found");
  if (is_connect) co_return co_await respond_json(exchange, 200, sandbox_json(*row));
  co_await exchange.respond(204, "", "");
}

json metric_json(LiveSandbox& live) { return json::array({sandbox_metric(live)}); }

Task<void> metrics(Service& service, Exchange& exchange, const std::string& id) {
  auto live = service.find(id);
  if (!live) co_return co_await respond_error(exchange, 404, "sandbox " + id + " not found");
  co_await respond_json(exchange, 200, metric_json(*live));
}

// GET /sandboxes/metrics?sandbox_ids=a,b → {"sandboxes": {id: SandboxMetric}}
json metrics_of_many(Service& service, const std::string& ids) {
  json out = json::object();
  size_t start = 0;
  while (start <= ids.size()) {
    const size_t comma = ids.find(',', start);
    const std::string id = ids.substr(start, comma == std::string::npos ? comma : comma - start);
    if (auto live = service.find(id)) out[id] = metric_json(*live).at(0);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {{"sandboxes", out}};
}

Task<void> one_sandbox(Service& service, Exchange& exchange, const std::string& id,
                       const std::string& action) {
  const std::string& method = exchange.request().method;
  if (!ids::is_valid_sandbox_id(id)) {
    co_return co_await respond_error(exchange, 400, "sandboxID: must match [a-z0-9]+");
  }
  if (action.empty() && method == "GET") {
    auto live = service.find(id);
    if (!live) co_return co_await respond_error(exchange, 404, "sandbox " + id + " not found");
    co_return co_await respond_json(exchange, 200, detail_json(live->snapshot()));
  }
  if (action.empty() && method == "DELETE") {
    if (!co_await service.kill(id)) {
      co_return co_await respond_error(exchange, 404, "sandbox " + id + " not found");
    }
    co_return co_await exchange.respond(204, "", "");
  }
  if (action == "timeout" && method == "POST")
    co_return co_await set_timeout(service, exchange, id, false);
  if (action == "connect" && method == "POST")
    co_return co_await set_timeout(service, exchange, id, true);
  if (action == "metrics" && method == "GET") co_return co_await metrics(service, exchange, id);
  co_await respond_error(exchange, 404, "no route for " + method + " " + exchange.request().path);
}

}  // namespace

Task<void> sandboxes(Service& service, Exchange& exchange) {
  const auto& req = exchange.request();
  const bool v2 = req.path.rfind("/v2/", 0) == 0;
  // /v2/... has the v1 shapes; v2 lists paginate and v2 creates are always secured.
  const std::string path = v2 ? req.path.substr(3) : req.path;
  if (path == "/sandboxes" && req.method == "GET") co_return co_await list(service, exchange, v2);
  if (path == "/sandboxes" && req.method == "POST")
    co_return co_await create(service, exchange, v2);
  if (req.path == "/sandboxes/metrics" && req.method == "GET") {
    const auto ids = req.query.find("sandbox_ids");
    const json body = metrics_of_many(service, ids == req.query.end() ? "" : ids->second);
    co_return co_await respond_json(exchange, 200, body);
  }
  if (path.rfind("/sandboxes/", 0) == 0) {
    const std::string rest = path.substr(11);
    const size_t slash = rest.find('/');
    const std::string id = rest.substr(0, slash);
    const std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
    co_return co_await one_sandbox(service, exchange, id, action);
  }
  co_await respond_error(exchange, 404, "no route for " + req.method + " " + req.path);
}

nlohmann::json sandbox_metric(LiveSandbox& live) {
  const SandboxRow row = live.snapshot();
  const auto usage = live.sandbox->usage();
  const int64_t now = now_ms();
  const double elapsed_ns = std::max<int64_t>(1, now - row.started_at_ms) * 1e6;
  const double cpu_pct =
      100.0 * static_cast<double>(usage.cpu_usage_ns) / (elapsed_ns * std::max(1u, row.cpu_count));
  return {{"timestamp", time_text(now)},
          {"timestampUnix", now / 1000},
          {"cpuCount", row.cpu_count},
          {"cpuUsedPct", cpu_pct},
          {"memUsed", usage.memory_bytes},
          {"memTotal", uint64_t{row.memory_mb} << 20},
          {"memCache", 0},
          {"diskUsed", 0},
          {"diskTotal", uint64_t{row.disk_size_mb} << 20}};
}

}  // namespace abx::daemon::routes
