#include "daemon/authentication.h"

#include "common/secrets.h"
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

}  // namespace

std::optional<Caller> authenticate_control(Credential need, const http::Request& request,
                                           const ApiKeys& keys) {
  auto caller = keys.caller_for(request.header("x-api-key"));
  if (need == Credential::none) return caller.value_or(Caller{});
  return caller;
}

SandboxAuthentication authenticate_sandbox(Credential need, const http::Request& request,
                                           const SandboxRow& row, const ApiKeys& keys) {
  if (token_matches(request, row)) {
    return granted(Caller{Caller::Kind::access_token, {}, row.owner, false, row.id});
  }
  const auto key = keys.caller_for(request.header("x-api-key"));
  if (key && key->team != row.owner) return {SandboxAccess::foreign, *key};
  if (key) return granted(*key);
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
  return {};
}

}  // namespace abx::daemon
