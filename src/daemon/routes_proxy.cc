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

// What the sandbox's network settings say about requests to `port`.
http::Upstream upstream_for(const nlohmann::json& network, int port, UniqueFd socket) {
  http::Upstream out{std::move(socket), {}, false};
  if (const auto mask = network.find("maskRequestHost"); mask != network.end()) {
    out.host = mask->get<std::string>();
    const std::string placeholder = "${PORT}";
    for (size_t at = out.host.find(placeholder); at != std::string::npos;
         at = out.host.find(placeholder, at))
      out.host.replace(at, placeholder.size(), std::to_string(port));
  }
  if (const auto tls = network.find("httpsPorts"); tls != network.end())
    for (const auto& p : *tls) out.tls = out.tls || p.get<int>() == port;
  return out;
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
  co_await http::forward(exchange,
                         upstream_for(call.row.network, port, std::move(connected->value())));
}

}  // namespace abx::daemon::routes
