// The HTTP/1.1 listener: keep-alive, chunked bodies both ways, one coroutine
// per connection on its own strand.
#pragma once

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

// Binds `host_port` ("127.0.0.1:49980"; port 0 picks a free one) and accepts
// on `ioc`, holding up to `max_connections` client connections at once (0: 4096
// or half the open-files limit, whichever is lower). Returns the bound port.
Result<uint16_t> listen(boost::asio::io_context& ioc, const std::string& host_port, Handler handler,
                        size_t max_connections = 0);

}  // namespace abx::daemon::http
