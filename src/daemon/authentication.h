// What a request's credential makes of its caller, per the credential its
// route needs (route_table.h): an API key's team, or a sandbox's token.
#pragma once

#include <optional>
#include <string>

#include "daemon/api_keys.h"
#include "daemon/caller.h"
#include "daemon/http_exchange.h"
#include "daemon/route_table.h"
#include "daemon/sandbox_row.h"

namespace abx::daemon {

// The caller of a control-plane request, or nothing when `need` is not met.
std::optional<Caller> authenticate_control(Credential need, const http::Request& request,
                                           ApiKeys& keys);

// The caller of a request to `row`'s sandbox plane, or nothing when `need`
// is not met. A sandbox created without a token needs none (E2B's rule).
std::optional<Caller> authenticate_sandbox(Credential need, const http::Request& request,
                                           const SandboxRow& row, ApiKeys& keys);

}  // namespace abx::daemon
