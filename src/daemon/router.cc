#include "daemon/router.h"

#include <spdlog/spdlog.h>

#include "daemon/authentication.h"
#include "daemon/envd_auth.h"
#include "daemon/plane.h"
#include "daemon/route_table.h"
#include "daemon/routes.h"

namespace abx::daemon {
namespace {

using http::Exchange;
using http::Task;

// Built outside the coroutines: g++ 12 rejects string literals in braced
// initializers inside a coroutine body ("array used as initializer").
nlohmann::json sandbox_missing(const std::string& id) {
  return {{"sandboxId", id}, {"message", "The sandbox was not found"}, {"code", 502}};
}

// What E2B's proxy answers for a paused sandbox: the SDK's is_running() is false.
nlohmann::json sandbox_paused(const std::string& id) {
  return {{"sandboxId", id},
          {"message", "The sandbox is paused: resume it with connect"},
          {"code", 502}};
}

http::Headers allow_header(const std::string& allowed) { return {{"Allow", allowed}}; }

std::string no_route(const http::Request& request) {
  return "no route for " + request.method + " " + request.path;
}

// The answer when no row matched: 405 when the path exists with other
// methods, else each plane's own "not found".
Task<void> unmatched(Exchange& exchange, Plane plane, const RouteMatch& match) {
  const auto& request = exchange.request();
  if (!match.allowed.empty()) {
    const std::string message =
        request.method + " is not allowed on " + request.path + "; use " + match.allowed;
    co_return co_await routes::respond_json(exchange, 405, routes::error_json(405, message),
                                            allow_header(match.allowed));
  }
  if (plane == Plane::envd) {
    co_return co_await routes::connect_error(exchange, "unimplemented",
                                             no_route(request) + " is not served by this envd");
  }
  co_await routes::respond_error(exchange, 404, no_route(request));
}

// Why a request was refused; a signed /files link hears what was wrong with
// it ("signature is already expired").
std::string unauthenticated_message(Credential need, const http::Request& request,
                                    const SandboxRow& row) {
  if (uses_session_cookie(request)) return kSessionRefused;
  if (need == Credential::token_or_signature && !row.access_token.empty()) {
    std::string refusal = envd_auth::signed_url_refusal(request.query, request.method,
                                                        row.access_token, now_ms() / 1000);
    if (!refusal.empty()) return refusal;
  }
  if (need == Credential::traffic_token) {
    return "this sandbox's ports need its traffic access token in the e2b-traffic-access-token "
           "header";
  }
  return "this sandbox needs its X-Access-Token (envdAccessToken) or an X-API-KEY of its team";
}

Plane plane_of_port(int port) {
  if (port == kEnvdPort) return Plane::envd;
  if (port == kInterpreterPort) return Plane::interpreter;
  return Plane::proxy;
}

// Short of connections, the ones the server keeps in reserve serve only
// callers with a credential, and /health: requests without one cannot lock
// every key out by holding every connection.
Task<bool> may_use_connection(Exchange& exchange, const Caller& caller) {
  if (!caller.is_anonymous()) {
    exchange.set_authenticated();
    co_return true;
  }
  if (!exchange.on_reserve() || exchange.request().path == "/health") co_return true;
  co_await routes::respond_error(
      exchange, 503,
      "the daemon is at its connection limit; retry shortly (requests with a credential are "
      "still served)");
  co_return false;
}

class Router {
 public:
  Router(Service& service, std::shared_ptr<ApiKeys> keys, std::string key_path)
      : service_(service), keys_(std::move(keys)), key_path_(std::move(key_path)) {}

  Task<void> route(Exchange& exchange) {
    const auto& request = exchange.request();
    spdlog::debug("http: {} {}", request.method, request.target);
    if (auto target = sandbox_target(request)) co_return co_await sandbox_plane(exchange, *target);
    if (is_signed_files_url(request)) co_return co_await signed_files(exchange);
    co_await control_plane(exchange);
  }

 private:
  CallerSources sources() { return {*keys_, service_.dashboard_sessions()}; }

  static bool is_signed_files_url(const http::Request& request) {
    return request.path == "/files" && request.query.contains("signature");
  }

  // A /files link as the SDK's download_url()/upload_url() hand it out against
  // E2B_SANDBOX_URL names no sandbox: the sandbox whose token signed it is the one.
  Task<void> signed_files(Exchange& exchange) {
    const auto& request = exchange.request();
    std::vector<envd_auth::Signer> signers;
    for (const SandboxRow& row : service_.list()) signers.push_back({row.id, row.access_token});
    const auto id = envd_auth::signer_of(request.query, request.method, signers, now_ms() / 1000);
    if (!id) {
      const std::string message =
          "this signed URL matches no running sandbox: the sandbox has ended, or the link was "
          "changed; ask for a new one";
      co_return co_await routes::respond_error(exchange, 401, message);
    }
    const SandboxTarget target{*id, kEnvdPort};
    co_await sandbox_plane(exchange, target);
  }

  Task<void> control_plane(Exchange& exchange) {
    const auto& request = exchange.request();
    RouteMatch match = match_route(Plane::control, request.method, request.path);
    // Without a row, a caller without a key still hears 401 first, as before
    // the table: which paths exist is told only to callers with a key.
    const Credential need = match.route ? match.route->credential : Credential::api_key;
    auto caller = authenticate_control(need, request, sources());
    if (!caller) {
      const std::string message =
          uses_session_cookie(request)
              ? std::string(kSessionRefused)
              : "Invalid API key: set ABX_SANDBOX_API_KEY (or E2B_API_KEY) to the key in " +
                    key_path_;
      co_return co_await routes::respond_error(exchange, 401, message);
    }
    if (!co_await may_use_connection(exchange, *caller)) co_return;
    if (!match.route) co_return co_await unmatched(exchange, Plane::control, match);
    if (match.route->credential == Credential::admin_key && !caller->admin) {
      co_return co_await routes::respond_error(
          exchange, 403, "this needs an admin API key (`abx keys create --admin`)");
    }
    routes::ControlCall call{service_, std::move(*caller), std::move(match.params)};
    co_await std::get<ControlHandler>(match.route->handler)(call, exchange);
  }

  // A sandbox that stopped on its own tells why, to callers it would have
  // admitted; anyone else hears of an unknown sandbox.
  nlohmann::json missing_sandbox_answer(const http::Request& request, const std::string& id) {
    auto stopped = service_.stopped(id);
    if (!stopped) return sandbox_missing(id);
    const auto access =
        authenticate_sandbox(Credential::access_token, request, stopped->row, sources());
    if (access.access != SandboxAccess::granted) return sandbox_missing(id);
    nlohmann::json answer = sandbox_missing(id);
    answer["message"] = stopped->message();
    return answer;
  }

  // A filesystem-paused sandbox answers as paused to its own callers
  // (traffic does not wake it: a resume cold boots, connect does that).
  bool paused_on_disk(const http::Request& request, const std::string& id) {
    auto row = service_.dormant(id);
    if (!row) return false;
    const auto access = authenticate_sandbox(Credential::access_token, request, *row, sources());
    return access.access == SandboxAccess::granted;
  }

  // A request to a paused sandbox created with autoResume wakes it, for the
  // default timeout (E2B's auto-resume), or the team's longest when that is
  // shorter. False when it could not be resumed.
  Task<bool> resume_for_request(const std::shared_ptr<LiveSandbox>& live) {
    const uint32_t longest = service_.quotas().quota_for(live->snapshot().owner).max_timeout_sec;
    const int seconds = longest > 0 && longest < static_cast<uint32_t>(kDefaultTimeoutSec)
                            ? static_cast<int>(longest)
                            : kDefaultTimeoutSec;
    auto resumed = co_await service_.resume(live, seconds);
    if (!resumed) {
      spdlog::warn("sandbox {}: auto-resume: {}", live->snapshot().id, resumed.error().message());
      co_return false;
    }
    co_return !live->snapshot().paused;
  }

  Task<void> sandbox_plane(Exchange& exchange, const SandboxTarget& target) {
    const auto& request = exchange.request();
    auto live = service_.find(target.sandbox_id);
    if (!live && paused_on_disk(request, target.sandbox_id)) {
      co_return co_await routes::respond_json(exchange, 502, sandbox_paused(target.sandbox_id));
    }
    if (!live) {
      const nlohmann::json answer = missing_sandbox_answer(request, target.sandbox_id);
      co_return co_await routes::respond_json(exchange, 502, answer);
    }
    const Plane plane = plane_of_port(target.port);
    RouteMatch match = match_route(plane, request.method, request.path);
    routes::SandboxCall call{service_, live, live->snapshot(), std::move(match.params)};
    // Without a row, the sandbox's credential is still asked for first.
    const Credential need = match.route ? match.route->credential : Credential::access_token;
    auto authenticated = authenticate_sandbox(need, request, call.row, sources());
    // Another team's key learns nothing: its sandboxes look like unknown ones.
    if (authenticated.access == SandboxAccess::foreign) {
      co_return co_await routes::respond_json(exchange, 502, sandbox_missing(target.sandbox_id));
    }
    if (authenticated.access == SandboxAccess::unauthenticated) {
      co_return co_await routes::respond_error(exchange, 401,
                                               unauthenticated_message(need, request, call.row));
    }
    if (!co_await may_use_connection(exchange, authenticated.caller)) co_return;
    if (call.row.paused) {
      bool resumed = false;
      if (call.row.auto_resume && match.route) resumed = co_await resume_for_request(live);
      if (!resumed)
        co_return co_await routes::respond_json(exchange, 502, sandbox_paused(target.sandbox_id));
      call.row = live->snapshot();
    }
    if (!match.route) co_return co_await unmatched(exchange, plane, match);
    call.caller = std::move(authenticated.caller);
    if (plane == Plane::proxy) call.params["port"] = std::to_string(target.port);
    co_await std::get<SandboxHandler>(match.route->handler)(call, exchange);
  }

  Service& service_;
  std::shared_ptr<ApiKeys> keys_;
  std::string key_path_;
};

}  // namespace

// The handler is a plain lambda returning the router's coroutine: g++ 12
// mishandles lambdas that are coroutines themselves.
http::Handler make_router(Service& service, std::shared_ptr<ApiKeys> keys, std::string key_path) {
  auto router = std::make_shared<Router>(service, std::move(keys), std::move(key_path));
  return [router](Exchange& exchange) { return router->route(exchange); };
}

}  // namespace abx::daemon
