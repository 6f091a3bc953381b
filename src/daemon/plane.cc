#include "daemon/plane.h"

#include <charconv>

#include "common/ids.h"

namespace abx::daemon {
namespace {

std::optional<int> parse_port(std::string_view text) {
  int port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc{} || end != text.data() + text.size() || port < 1 || port > 65535) {
    return std::nullopt;
  }
  return port;
}

// "49983-iabc.localhost:3000" → {iabc, 49983}
std::optional<SandboxTarget> from_host(std::string_view host) {
  const size_t dot = host.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view label = host.substr(0, dot);
  const size_t dash = label.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto port = parse_port(label.substr(0, dash));
  const std::string_view id = label.substr(dash + 1);
  if (!port || !ids::is_valid_sandbox_id(id)) return std::nullopt;
  return SandboxTarget{std::string(id), *port};
}

}  // namespace

std::optional<SandboxTarget> sandbox_target(const http::Request& request) {
  const std::string id = request.header("e2b-sandbox-id");
  if (!id.empty()) {
    const std::string port_text = request.header("e2b-sandbox-port");
    // An unparsable port is still a sandbox-plane request; port 0 answers "port is not open".
    const int port = port_text.empty() ? kEnvdPort : parse_port(port_text).value_or(0);
    return SandboxTarget{id, port};
  }
  return from_host(request.header("host"));
}

}  // namespace abx::daemon
