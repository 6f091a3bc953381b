// Every endpoint the daemon serves, as one table (like firecracker's
// parsed_request.rs): method, path pattern, plane, the credential it needs and
// the handler. A newcomer finds any endpoint by grepping route_table.cc;
// spec/daemon-api.md lists the same rows and a unit test keeps them equal.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "daemon/routes.h"

namespace abx::daemon {

enum class Plane {
  control,      // no sandbox named: /sandboxes, /abx/v1, /mcp, /health
  envd,         // a sandbox's port 49983
  interpreter,  // a sandbox's port 49999
  proxy,        // any other port of a sandbox: a server its code runs
};

enum class Credential {
  none,                // anyone (health checks)
  api_key,             // X-API-KEY of a team
  admin_key,           // X-API-KEY of an admin key (keys, quotas)
  access_token,        // the sandbox's X-Access-Token, or an API key of its team
  token_or_signature,  // /files: as access_token, or a signed URL for that path
  traffic_token,       // proxied ports: e2b-traffic-access-token when the sandbox
                       // was made with allowPublicTraffic false, else none
  volume_token,        // the volume's Authorization: Bearer token, or an API key of
                       // its team (the route checks which: routes_volumes.cc)
};

using ControlHandler = http::Task<void> (*)(routes::ControlCall&, http::Exchange&);
using SandboxHandler = http::Task<void> (*)(routes::SandboxCall&, http::Exchange&);

struct Route {
  std::string_view method;   // "GET", "POST", "DELETE", or "*" for any
  std::string_view pattern;  // "/sandboxes/{id}/timeout"; {x} is one segment; "*" is any path
  Plane plane;
  Credential credential;
  std::variant<ControlHandler, SandboxHandler> handler;
  std::string_view handler_name;  // as spec/daemon-api.md names it
};

std::span<const Route> route_table();

struct RouteMatch {
  const Route* route = nullptr;  // null: no row for this method (see `allowed`)
  std::map<std::string, std::string> params;
  std::string allowed;  // when the path matched but the method did not: "GET, DELETE"
};

// The row for a request on `plane`; route == nullptr and allowed == "" when
// no row has this path.
RouteMatch match_route(Plane plane, std::string_view method, std::string_view path);

std::string_view plane_name(Plane plane);
std::string_view credential_name(Credential credential);

}  // namespace abx::daemon
