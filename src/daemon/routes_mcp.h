// /mcp on the control plane: the MCP tools over MCP's Streamable HTTP
// transport, for agents that connect to the daemon remotely.
#pragma once

#include <string>

#include "daemon/http_exchange.h"
#include "daemon/service.h"

namespace abx::daemon::routes {

// POST (JSON-RPC in, JSON out; Mcp-Session-Id from initialize on), DELETE
// (ends the session and kills its sandbox). The caller has checked the API
// key; the tools call this daemon's own API on loopback with it.
http::Task<void> mcp(Service& service, http::Exchange& exchange, const std::string& api_key);

}  // namespace abx::daemon::routes
