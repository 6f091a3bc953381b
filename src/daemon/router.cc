#include "daemon/router.h"

#include <spdlog/spdlog.h>

#include "daemon/envd_auth.h"
#include "daemon/http_proxy.h"
#include "daemon/plane.h"
#include "daemon/routes.h"
#include "daemon/routes_mcp.h"
#include "runtime/sandbox_net.h"

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
  if (port > 0) {
    co_await call.service.pool().run([&] {
      connected = runtime::connect_tcp(*call.live->sandbox, static_cast<uint16_t>(port));
    });
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

Task<void> envd(routes::SandboxCall& call, Exchange& exchange) {
  const auto& req = exchange.request();
  if (!envd_authorized(req, call.row)) {
    co_await routes::respond_error(exchange, 401, "invalid or missing X-Access-Token");
  } else if (req.path == "/health") {
    co_await exchange.respond(204, "", "");
  } else if (req.path == "/files") {
    co_await routes::files(call, exchange);
  } else if (req.path == "/metrics" && req.method == "GET") {
    co_await routes::envd_metrics(call, exchange);
  } else if (req.path == "/envs" && req.method == "GET") {
    co_await routes::respond_json(exchange, 200, call.row.env_vars);
  } else if (req.method == "POST" && starts_with(req.path, "/process.Process/")) {
    co_await routes::process(call, exchange, req.path.substr(17));
  } else if (req.method == "POST" && starts_with(req.path, "/filesystem.Filesystem/")) {
    co_await routes::filesystem(call, exchange, req.path.substr(23));
  } else {
    co_await routes::connect_error(exchange, "unimplemented",
                                   req.method + " " + req.path + " is not served by this envd");
  }
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
    co_return co_await routes::interpreter(call, exchange);
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
