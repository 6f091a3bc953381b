#include "daemon/authentication.h"

#include "daemon/envd_auth.h"
#include "daemon/service.h"

namespace abx::daemon {
namespace {

std::optional<Caller> token_caller(const http::Request& request, const SandboxRow& row) {
  if (row.access_token.empty() || request.header("x-access-token") != row.access_token)
    return std::nullopt;
  return Caller{Caller::Kind::access_token, {}, row.owner, false, row.id};
}

// envd's signed /files URLs: the signature stands in for the token.
bool signed_url_valid(const http::Request& request, const SandboxRow& row) {
  const char* operation = request.method == "GET" ? "read" : "write";
  return envd_auth::file_signature_valid(request.query, operation, row.access_token,
                                         now_ms() / 1000);
}

}  // namespace

std::optional<Caller> authenticate_control(Credential need, const http::Request& request,
                                           ApiKeys& keys) {
  auto caller = keys.caller_for(request.header("x-api-key"));
  if (caller || need == Credential::none) return caller.value_or(Caller{});
  return std::nullopt;
}

std::optional<Caller> authenticate_sandbox(Credential need, const http::Request& request,
                                           const SandboxRow& row, ApiKeys& keys) {
  if (auto caller = token_caller(request, row)) return caller;
  auto caller = keys.caller_for(request.header("x-api-key")).value_or(Caller{});
  switch (need) {
    case Credential::none:
      return caller;
    case Credential::api_key:
      if (caller.is_anonymous()) return std::nullopt;
      return caller;
    case Credential::access_token:
      if (!row.access_token.empty()) return std::nullopt;
      return caller;
    case Credential::token_or_signature:
      if (!row.access_token.empty() && !signed_url_valid(request, row)) return std::nullopt;
      return caller;
  }
  return std::nullopt;
}

}  // namespace abx::daemon
