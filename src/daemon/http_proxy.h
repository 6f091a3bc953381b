// Forwarding one HTTP request to a server inside a sandbox (any port but
// envd's and the interpreter's) and streaming its response back.
#pragma once

#include <string>

#include "common/unique_fd.h"
#include "daemon/http_exchange.h"

namespace abx::daemon::http {

struct Upstream {
  UniqueFd socket;   // connected TCP
  std::string host;  // replaces the client's Host header (maskRequestHost); empty: kept
  bool tls = false;  // the server speaks HTTPS (network.httpsPorts)
};

// The request goes out with "Connection: close" and the response body is
// relayed as it arrives; a protocol switch the client asks for (a WebSocket)
// goes on to the server, and once it answers 101 the connection carries
// bytes both ways until either side closes.
Task<void> forward(Exchange& exchange, Upstream upstream);

}  // namespace abx::daemon::http
