// Sandbox plane, any port but envd's and the interpreter's: a server the
// user runs inside the sandbox, reached in its network namespace.
#include "daemon/http_proxy.h"
#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"

namespace abx::daemon::routes {
namespace {

// Built outside the coroutines: g++ 12 rejects string literals in braced
// initializers inside a coroutine body ("array used as initializer").
nlohmann::json port_closed(const std::string& id, int port) {
  return {{"sandboxId", id},
          {"message", "The sandbox is running but port is not open"},
          {"code", 502},
          {"port", port}};
}

}  // namespace

Task<void> proxy_port(SandboxCall& call, Exchange& exchange) {
  const int port = std::stoi(call.params.at("port"));  // set by the router from a checked port
  std::optional<Result<UniqueFd>> connected;
  if (port > 0 && port <= 65535)
    connected = co_await sandbox_ops::connect_port(call.service, *call.live->sandbox,
                                                   static_cast<uint16_t>(port));
  if (!connected || !*connected) {
    co_return co_await respond_json(exchange, 502, port_closed(call.row.id, port));
  }
  co_await http::forward(exchange, std::move(connected->value()));
}

}  // namespace abx::daemon::routes
