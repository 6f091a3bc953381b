// The web dashboard's page, its embedded assets, and its login sessions
// (/dashboard). The page then calls the daemon's own JSON API: the session
// cookie is a caller there too (authentication.cc).
#include <spdlog/spdlog.h>

#include "daemon/authentication.h"
#include "daemon/cookies.h"
#include "daemon/routes.h"
#include "dashboard/assets.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr size_t kMaxLoginBody = 4096;

// What every dashboard response carries: scripts only from the daemon (no
// inline script an injected string could become), never framed (no
// clickjacking), nothing guessed about content types, no referrer. Inline
// styles are allowed: xterm.js sizes its rows with <style> elements it makes.
http::Headers page_headers(std::string cache) {
  return {{"Content-Security-Policy",
           "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
           "frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "no-referrer"},
          {"Cache-Control", std::move(cache)}};
}

// Arguments are built before the co_await: g++ 12 destroys some temporaries
// of a co_await's full expression twice (a conditional's std::string did).
Task<void> respond_asset(Exchange& exchange, const dashboard::Asset& asset,
                         std::string cache = "no-cache") {
  std::string type(asset.content_type);
  std::string body(asset.body);
  http::Headers headers = page_headers(std::move(cache));
  co_await exchange.respond(200, std::move(type), std::move(body), std::move(headers));
}

std::string cookie_session_id(const http::Request& request) {
  return std::string(cookies::value_of(request.header("cookie"), cookies::kSessionCookie));
}

// A cross-site form can post only form encodings and text/plain: asking for
// JSON keeps logins to the page's own fetch (a form would need a preflight).
bool is_json_request(const http::Request& request) {
  return request.header("content-type").starts_with("application/json");
}

std::string api_key_in(const std::string& body) {
  const json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("apiKey") || !doc["apiKey"].is_string()) return "";
  return doc["apiKey"].get<std::string>();
}

json session_json(const Caller& caller, const std::string& csrf) {
  return {{"team", caller.team}, {"admin", caller.admin}, {"keyId", caller.key_id}, {"csrf", csrf}};
}

}  // namespace

Task<void> dashboard_page(ControlCall&, Exchange& exchange) {
  co_await respond_asset(exchange, *dashboard::find_asset("index.html"));
}

Task<void> dashboard_asset(ControlCall& call, Exchange& exchange) {
  const dashboard::Asset* asset = dashboard::find_asset(call.params["name"]);
  const std::string missing = "no dashboard asset by that name";
  if (!asset) co_return co_await respond_error(exchange, 404, missing);
  co_await respond_asset(exchange, *asset);
}

// GET /dashboard/assets/{version}/{name}, as the page names them: a file of
// this build's version never changes, so the browser keeps it (a year, and
// does not ask again) and a new page load fetches the page alone. Another
// version (a page from before an upgrade) gets today's file, not to be kept.
Task<void> dashboard_versioned_asset(ControlCall& call, Exchange& exchange) {
  const dashboard::Asset* asset = dashboard::find_asset(call.params["name"]);
  const std::string missing = "no dashboard asset by that name";
  if (!asset || asset->name == "index.html")
    co_return co_await respond_error(exchange, 404, missing);
  const bool current = call.params["version"] == dashboard::assets_version();
  std::string cache = current ? "public, max-age=31536000, immutable" : "no-cache";
  co_await respond_asset(exchange, *asset, std::move(cache));
}

// POST /dashboard/login {"apiKey": "..."}: checks the key as any request's
// key is checked, and opens a session the browser holds in a cookie.
Task<void> dashboard_login(ControlCall& call, Exchange& exchange) {
  if (!is_json_request(exchange.request())) {
    const std::string wrong_type = "log in with a JSON body {\"apiKey\": ...}";
    co_return co_await respond_error(exchange, 415, wrong_type);
  }
  auto body = co_await read_json_body(exchange, kMaxLoginBody);
  if (!body) co_return co_await respond_error(exchange, body.error());
  const auto caller = call.service.keys().caller_for(api_key_in(*body));
  if (!caller) {
    const std::string refused =
        "that API key is not valid: use the daemon's key (the api_key file in its data dir) or "
        "one from abx keys create";
    co_return co_await respond_error(exchange, 401, refused);
  }
  const auto opened = call.service.dashboard_sessions().open(caller->key_id, now_ms());
  spdlog::info("dashboard: key {} (team {}) logged in", caller->key_id, caller->team);
  const http::Headers cookie = {
      {"Set-Cookie", cookies::session_set_cookie(opened.id, DashboardSessions::kLifetimeMs / 1000)},
      {"Cache-Control", "no-store"}};
  const json answer = session_json(*caller, opened.csrf);
  co_await respond_json(exchange, 200, answer, cookie);
}

// The router admitted the request: with a cookie, its CSRF token matched.
Task<void> dashboard_logout(ControlCall& call, Exchange& exchange) {
  call.service.dashboard_sessions().close(cookie_session_id(exchange.request()));
  const http::Headers clear = {{"Set-Cookie", cookies::session_clear_cookie()}};
  co_await exchange.respond(204, "", "", clear);
}

// GET /dashboard/session: who the page acts as, and the CSRF token it must
// send (a reloaded page has lost it). Another site cannot read the answer.
Task<void> dashboard_session(ControlCall& call, Exchange& exchange) {
  const auto session =
      call.service.dashboard_sessions().find(cookie_session_id(exchange.request()), now_ms());
  const std::string csrf = session ? session->csrf : std::string();
  const json answer = session_json(call.caller, csrf);
  const http::Headers no_store = {{"Cache-Control", "no-store"}};
  co_await respond_json(exchange, 200, answer, no_store);
}

// GET /dashboard/bootstrap: what a loaded page needs before it can show
// anything, in one answer the page asks for while its scripts still load (a
// preload in index.html): the session as above, and the snapshot its event
// feed would start with; the feed, told the digest, then sends only changes.
Task<void> dashboard_bootstrap(ControlCall& call, Exchange& exchange) {
  const auto session =
      call.service.dashboard_sessions().find(cookie_session_id(exchange.request()), now_ms());
  const std::string csrf = session ? session->csrf : std::string();
  const FeedSnapshot snapshot = dashboard_feed_snapshot(call.service, call.caller);
  // The snapshot's text as it is (a thousand listings are not parsed again).
  std::string answer = R"({"session":)" + session_json(call.caller, csrf).dump() +
                       R"(,"sandboxes":)" + snapshot.sandboxes + R"(,"digest":")" +
                       snapshot.digest + R"("})";
  std::string type = "application/json";
  http::Headers no_store = {{"Cache-Control", "no-store"}};
  co_await exchange.respond(200, std::move(type), std::move(answer), std::move(no_store));
}

}  // namespace abx::daemon::routes
