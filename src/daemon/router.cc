#include "daemon/router.h"

#include <spdlog/spdlog.h>

#include "daemon/envd_auth.h"
#include "daemon/http_proxy.h"
#include "daemon/plane.h"
#include "daemon/routes.h"
#include "daemon/routes_mcp.h"
#include "daemon/sandbox_ops.h"

namespace abx::daemon {
namespace {

using http::Exchange;
using http::Task;

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// Built outside the coroutines: g++ 12 rejects string literals in braced
// initializers inside a coroutine body ("array used as initializer").
nlohmann::json proxy_error(const std::string& id, const std::string& message, int port) {
  nlohmann::json out = {{"sandboxId", id}, {"message", message}, {"code", 502}};
  if (port != 0) out["port"] = port;
  return out;
}

Task<void> sandbox_not_found(Exchange& exchange, const std::string& id) {
  co_await routes::respond_json(exchange, 502, proxy_error(id, "The sandbox was not found", 0));
}

// Any other port: a server the user runs inside the sandbox, reached in its
// network namespace.
Task<void> other_port(routes::SandboxCall& call, Exchange& exchange, int port) {
  std::optional<Result<UniqueFd>> connected;
  if (port > 0 && port <= 65535) {
    connected = co_await sandbox_ops::connect_port(call.service, *call.live->sandbox,
                                                   static_cast<uint16_t>(port));
  }
  if (!connected || !*connected) {
    co_return co_await routes::respond_json(
        exchange, 502,
        proxy_error(call.row.id, "The sandbox is running but port is not open", port));
  }
  co_await http::forward(exchange, std::move(connected->value()));
}

// envd checks X-Access-Token on everything but /health and signed /files.
bool envd_authorized(const http::Request& request, const SandboxRow& row) {
  if (row.access_token.empty() || request.path == "/health") return true;
  if (request.header("x-access-token") == row.access_token) return true;
  if (request.path != "/files") return false;
  const char* operation = request.method == "GET" ? "read" : "write";
  return envd_auth::file_signature_valid(request.query, operation, row.access_token,
                                         now_ms() / 1000);
}

using SandboxHandler = Task<void> (*)(routes::SandboxCall&, Exchange&);

// Interim method → handler maps until route_table.cc replaces this file's
// dispatch: envd's Connect RPCs by path (all POST) and the interpreter's
// routes by "METHOD path" ({context} taken out of the path first).
const std::map<std::string, SandboxHandler>& envd_rpcs() {
  static const std::map<std::string, SandboxHandler> table = {
      {"/process.Process/Start", routes::process_start},
      {"/process.Process/Connect", routes::process_connect},
      {"/process.Process/List", routes::process_list},
      {"/process.Process/SendInput", routes::process_send_input},
      {"/process.Process/Update", routes::process_update},
      {"/process.Process/SendSignal", routes::process_send_signal},
      {"/process.Process/CloseStdin", routes::process_close_stdin},
      {"/filesystem.Filesystem/Stat", routes::fs_stat},
      {"/filesystem.Filesystem/MakeDir", routes::fs_make_dir},
      {"/filesystem.Filesystem/Move", routes::fs_move},
      {"/filesystem.Filesystem/ListDir", routes::fs_list_dir},
      {"/filesystem.Filesystem/Remove", routes::fs_remove},
      {"/filesystem.Filesystem/WatchDir", routes::fs_watch_dir},
      {"/filesystem.Filesystem/CreateWatcher", routes::fs_create_watcher},
      {"/filesystem.Filesystem/GetWatcherEvents", routes::fs_get_watcher_events},
      {"/filesystem.Filesystem/RemoveWatcher", routes::fs_remove_watcher},
  };
  return table;
}

const std::map<std::string, SandboxHandler>& interpreter_routes() {
  static const std::map<std::string, SandboxHandler> table = {
      {"GET /health", routes::interp_health},
      {"POST /execute", routes::interp_execute},
      {"GET /contexts", routes::interp_list_contexts},
      {"POST /contexts", routes::interp_create_context},
      {"DELETE /contexts", routes::interp_remove_context},  // no id: the handler's 400
      {"DELETE /contexts/{context}", routes::interp_remove_context},
      {"POST /contexts/{context}/restart", routes::interp_restart_context},
  };
  return table;
}

// "/contexts/abc/restart" → "/contexts/{context}/restart", id "abc".
std::string interpreter_pattern(const std::string& path,
                                std::map<std::string, std::string>* params) {
  const std::string prefix = "/contexts/";
  if (!starts_with(path, prefix)) return path;
  const std::string rest = path.substr(prefix.size());
  const size_t slash = rest.find('/');
  (*params)["context"] = rest.substr(0, slash);
  return prefix + "{context}" + (slash == std::string::npos ? "" : rest.substr(slash));
}

Task<void> envd(routes::SandboxCall& call, Exchange& exchange) {
  const auto& req = exchange.request();
  const auto rpc = envd_rpcs().find(req.path);
  if (!envd_authorized(req, call.row)) {
    co_await routes::respond_error(exchange, 401, "invalid or missing X-Access-Token");
  } else if (req.path == "/health") {
    co_await exchange.respond(204, "", "");
  } else if (req.path == "/files" && req.method == "GET") {
    co_await routes::files_download(call, exchange);
  } else if (req.path == "/files" && req.method == "POST") {
    co_await routes::files_upload(call, exchange);
  } else if (req.path == "/files") {
    co_await routes::respond_error(exchange, 405, "/files accepts GET and POST");
  } else if (req.path == "/metrics" && req.method == "GET") {
    co_await routes::envd_metrics(call, exchange);
  } else if (req.path == "/envs" && req.method == "GET") {
    co_await routes::respond_json(exchange, 200, call.row.env_vars);
  } else if (req.method == "POST" && rpc != envd_rpcs().end()) {
    co_await rpc->second(call, exchange);
  } else {
    co_await routes::connect_error(exchange, "unimplemented",
                                   req.method + " " + req.path + " is not served by this envd");
  }
}

Task<void> interpreter(routes::SandboxCall& call, Exchange& exchange) {
  const auto& req = exchange.request();
  const std::string pattern = interpreter_pattern(req.path, &call.params);
  const auto route = interpreter_routes().find(req.method + " " + pattern);
  if (route == interpreter_routes().end()) {
    co_return co_await exchange.respond(404, "text/plain; charset=utf-8",
                                        "no route for " + req.method + " " + req.path);
  }
  co_await route->second(call, exchange);
}

Task<void> sandbox_plane(Service& service, Exchange& exchange, const SandboxTarget& target) {
  auto live = service.find(target.sandbox_id);
  if (!live) co_return co_await sandbox_not_found(exchange, target.sandbox_id);
  routes::SandboxCall call{service, live, live->snapshot()};
  if (target.port == kEnvdPort) co_return co_await envd(call, exchange);
  if (target.port == kInterpreterPort) {
    if (!envd_authorized(exchange.request(), call.row) && exchange.request().path == "/execute") {
      co_return co_await routes::respond_error(exchange, 401, "invalid or missing X-Access-Token");
    }
    co_return co_await interpreter(call, exchange);
  }
  co_await other_port(call, exchange, target.port);
}

Task<void> control_plane(Service& service, Exchange& exchange, ApiKeys& keys,
                         const std::string& key_path) {
  const auto& req = exchange.request();
  if (req.path == "/health" && req.method == "GET")
    co_return co_await routes::control_health(exchange);
  if (!keys.accepts(req.header("x-api-key"))) {
    co_return co_await routes::respond_error(
        exchange, 401,
        "Invalid API key: set ABX_SANDBOX_API_KEY (or E2B_API_KEY) to the key in " + key_path);
  }
  if (req.path == "/mcp") {
    co_return co_await routes::mcp(service, exchange, req.header("x-api-key"));
  }
  if (starts_with(req.path, "/sandboxes") || starts_with(req.path, "/v2/sandboxes")) {
    co_return co_await routes::sandboxes(service, exchange);
  }
  if (starts_with(req.path, "/abx/v1/templates"))
    co_return co_await routes::templates(service, exchange);
  co_await routes::respond_error(exchange, 404, "no route for " + req.method + " " + req.path);
}

Task<void> route(Service& service, Exchange& exchange, ApiKeys& keys, const std::string& key_path) {
  const auto& req = exchange.request();
  spdlog::debug("http: {} {}", req.method, req.target);
  if (auto target = sandbox_target(req)) {
    co_await sandbox_plane(service, exchange, *target);
  } else {
    co_await control_plane(service, exchange, keys, key_path);
  }
}

}  // namespace

// The handler is a plain lambda returning route()'s coroutine: g++ 12
// mishandles lambdas that are coroutines themselves.
http::Handler make_router(Service& service, std::shared_ptr<ApiKeys> keys, std::string key_path) {
  return [&service, keys = std::move(keys), key_path = std::move(key_path)](Exchange& exchange) {
    return route(service, exchange, *keys, key_path);
  };
}

}  // namespace abx::daemon
