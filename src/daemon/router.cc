#include "daemon/router.h"

#include <spdlog/spdlog.h>

#include "daemon/envd_auth.h"
#include "daemon/plane.h"
#include "daemon/routes.h"

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

// The seam for proxying to servers inside the sandbox (a later issue): today
// no other port is reachable.
Task<void> other_port(Exchange& exchange, const std::string& id, int port) {
  co_await routes::respond_json(
      exchange, 502, proxy_error(id, "The sandbox is running but port is not open", port));
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
  co_await other_port(exchange, target.sandbox_id, target.port);
}

Task<void> control_plane(Service& service, Exchange& exchange, const std::string& api_key,
                         const std::string& key_path) {
  const auto& req = exchange.request();
  if (req.path == "/health" && req.method == "GET")
    co_return co_await routes::control_health(exchange);
  if (req.header("x-api-key") != api_key) {
    co_return co_await routes::respond_error(
        exchange, 401,
        "Invalid API key: set ABX_SANDBOX_API_KEY (or E2B_API_KEY) to the key in " + key_path);
  }
  if (starts_with(req.path, "/sandboxes") || starts_with(req.path, "/v2/sandboxes")) {
    co_return co_await routes::sandboxes(service, exchange);
  }
  co_await routes::respond_error(exchange, 404, "no route for " + req.method + " " + req.path);
}

Task<void> route(Service& service, Exchange& exchange, const std::string& api_key,
                 const std::string& key_path) {
  const auto& req = exchange.request();
  spdlog::debug("http: {} {}", req.method, req.target);
  if (auto target = sandbox_target(req)) {
    co_await sandbox_plane(service, exchange, *target);
  } else {
    co_await control_plane(service, exchange, api_key, key_path);
  }
}

}  // namespace

// The handler is a plain lambda returning route()'s coroutine: g++ 12
// mishandles lambdas that are coroutines themselves.
http::Handler make_router(Service& service, std::string api_key, std::string key_path) {
  return [&service, api_key = std::move(api_key), key_path = std::move(key_path)](
             Exchange& exchange) { return route(service, exchange, api_key, key_path); };
}

}  // namespace abx::daemon
