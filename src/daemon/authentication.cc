#include "daemon/authentication.h"

#include "common/secrets.h"
#include "daemon/cookies.h"
#include "daemon/envd_auth.h"
#include "daemon/service.h"

namespace abx::daemon {
namespace {

bool token_matches(const http::Request& request, const SandboxRow& row) {
  return !row.access_token.empty() &&
         secrets_equal(request.header("x-access-token"), row.access_token);
}

// envd's signed /files URLs: the signature stands in for the token.
// A sandbox without a token has no signed URLs: anyone could sign with "".
bool signed_url_valid(const http::Request& request, const SandboxRow& row) {
  if (row.access_token.empty()) return false;
  const char* operation = request.method == "GET" ? "read" : "write";
  return envd_auth::file_signature_valid(request.query, operation, row.access_token,
                                         now_ms() / 1000);
}

bool traffic_token_matches(const http::Request& request, const SandboxRow& row) {
  return row.traffic_access_token.empty() ||
         secrets_equal(request.header("e2b-traffic-access-token"), row.traffic_access_token);
}

SandboxAuthentication granted(Caller caller) { return {SandboxAccess::granted, std::move(caller)}; }

bool is_safe_method(const std::string& method) { return method == "GET" || method == "HEAD"; }

// A session cookie's caller, if the session lives, its key is not revoked
// and (for a method that changes state) the page's CSRF token came along.
std::optional<Caller> session_caller(const http::Request& request, const CallerSources& sources) {
  const std::string header = request.header("cookie");
  const auto id = cookies::value_of(header, cookies::kSessionCookie);
  if (id.empty()) return std::nullopt;
  const auto session = sources.sessions.find(id, now_ms());
  if (!session) return std::nullopt;
  if (!is_safe_method(request.method) && !secrets_equal(request.header(kCsrfHeader), session->csrf))
    return std::nullopt;
  return sources.keys.caller_for_id(session->key_id);
}

}  // namespace

bool uses_session_cookie(const http::Request& request) {
  const std::string header = request.header("cookie");
  return !request.headers.contains("x-api-key") &&
         !cookies::value_of(header, cookies::kSessionCookie).empty();
}

std::optional<Caller> caller_of(const http::Request& request, const CallerSources& sources) {
  // A request with a key is judged by the key alone: a wrong key is not
  // rescued by a cookie the browser happened to send along.
  if (request.headers.contains("x-api-key"))
    return sources.keys.caller_for(request.header("x-api-key"));
  return session_caller(request, sources);
}

std::optional<Caller> authenticate_control(Credential need, const http::Request& request,
                                           const CallerSources& sources) {
  auto caller = caller_of(request, sources);
  if (need == Credential::none) return caller.value_or(Caller{});
  // A bearer token is the route's to check; a wrong API key is still refused.
  if (need == Credential::volume_token && !caller && !request.headers.contains("x-api-key"))
    return Caller{};
  return caller;
}

SandboxAuthentication authenticate_sandbox(Credential need, const http::Request& request,
                                           const SandboxRow& row, const CallerSources& sources) {
  if (token_matches(request, row)) {
    return granted(Caller{Caller::Kind::access_token, {}, row.owner, false, row.id});
  }
  const auto key = caller_of(request, sources);
  // A cookie comes along unasked: another team's session is no caller here,
  // so a signed URL or a traffic token still works for it.
  const bool foreign = key && key->team != row.owner;
  if (foreign && !uses_session_cookie(request)) return {SandboxAccess::foreign, *key};
  if (key && !foreign) return granted(*key);
  switch (need) {
    case Credential::none:
      return granted(Caller{});
    case Credential::token_or_signature:
      if (signed_url_valid(request, row)) return granted(Caller{});
      break;
    case Credential::traffic_token:
      if (traffic_token_matches(request, row)) return granted(Caller{});
      break;
    default:
      break;
  }
  if (foreign) return {SandboxAccess::foreign, *key};
  return {};
}

}  // namespace abx::daemon
