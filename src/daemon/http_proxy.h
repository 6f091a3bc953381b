// Forwarding one HTTP request to a server inside a sandbox (any port but
// envd's and the interpreter's) and streaming its response back.
#pragma once

#include "common/unique_fd.h"
#include "daemon/http_exchange.h"

namespace abx::daemon::http {

// `upstream` is a connected TCP socket; the request goes out with
// "Connection: close" and the response body is relayed as it arrives.
Task<void> forward(Exchange& exchange, UniqueFd upstream);

}  // namespace abx::daemon::http
