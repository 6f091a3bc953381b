// What a request's credential makes of its caller, per the credential its
// route needs (route_table.h): an API key's team, or a sandbox's token.
#pragma once

#include <optional>
#include <string>

#include "daemon/api_keys.h"
#include "daemon/caller.h"
#include "daemon/dashboard_sessions.h"
#include "daemon/http_exchange.h"
#include "daemon/route_table.h"
#include "daemon/sandbox_row.h"

namespace abx::daemon {

// Where a request's caller may come from: an X-API-KEY, or a dashboard
// session cookie (with its CSRF token in X-ABX-CSRF unless the method is GET
// or HEAD, so a cross-site form or link cannot act with it).
struct CallerSources {
  const ApiKeys& keys;
  DashboardSessions& sessions;
};

inline constexpr const char* kCsrfHeader = "x-abx-csrf";

// The request relies on a dashboard session cookie (it names no API key).
bool uses_session_cookie(const http::Request& request);
inline constexpr const char* kSessionRefused =
    "the dashboard session has ended or this request lacks its X-ABX-CSRF token: reload the "
    "dashboard (log in again if asked)";

// The caller a request's API key or dashboard session stands for.
std::optional<Caller> caller_of(const http::Request& request, const CallerSources& sources);

// The caller of a control-plane request, or nothing when `need` is not met
// (whether an admin_key route's caller is an admin is the router's question).
std::optional<Caller> authenticate_control(Credential need, const http::Request& request,
                                           const CallerSources& sources);

enum class SandboxAccess {
  granted,
  unauthenticated,  // no credential of this sandbox: 401
  foreign,          // an API key of another team: answered as an unknown sandbox
};

struct SandboxAuthentication {
  SandboxAccess access = SandboxAccess::unauthenticated;
  Caller caller;
};

// Whether a request to `row`'s sandbox plane may be served, and as whom.
// Every route but /health needs the sandbox's access token or an API key of
// its team (a signed URL stands in on /files); proxied ports are public
// unless the sandbox was made with allowPublicTraffic false.
SandboxAuthentication authenticate_sandbox(Credential need, const http::Request& request,
                                           const SandboxRow& row, const CallerSources& sources);

}  // namespace abx::daemon
