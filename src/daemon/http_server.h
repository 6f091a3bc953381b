// The HTTP/1.1 listener: keep-alive, chunked bodies both ways, one coroutine
// per connection on its own strand.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/error.h"
#include "daemon/http_exchange.h"

namespace boost::asio {
class io_context;
}

namespace abx::daemon::http {

using Handler = std::function<Task<void>(Exchange&)>;

struct ServerLimits {
  // Client connections held at once (0: 4096 or half the open-files limit,
  // whichever is lower).
  size_t max_connections = 0;
  // Of those, how many one client address may hold (0: a quarter of them).
  size_t max_per_address = 0;
  // How long a new connection has to send a complete request head, and a
  // keep-alive one from the first byte of its next request.
  std::chrono::seconds header_timeout{10};
};

// Binds `host_port` ("127.0.0.1:49980"; port 0 picks a free one) and accepts
// on `ioc` within `limits`. Returns the bound port.
Result<uint16_t> listen(boost::asio::io_context& ioc, const std::string& host_port, Handler handler,
                        const ServerLimits& limits = {});

}  // namespace abx::daemon::http
