#include "runtime/sandbox_net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <string>
#include <thread>

namespace abx::runtime {
namespace {

constexpr int kConnectTimeoutSec = 5;

Result<UniqueFd> connect_loopback(uint16_t port) {
  UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Error::from_errno("socket", "");
  // Bounds a connect to a port whose listener never accepts.
  timeval timeout{kConnectTimeoutSec, 0};
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return Error::from_errno("connect", "127.0.0.1:" + std::to_string(port) + " in the sandbox");
  }
  timeval none{0, 0};
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  return sock;
}

// Runs on its own short-lived thread: setns() changes only the calling
// thread's network namespace, and the socket keeps the namespace it was made in.
Result<UniqueFd> connect_in_namespace(int net_ns, uint16_t port) {
  if (::setns(net_ns, CLONE_NEWNET) != 0) return Error::from_errno("setns", "sandbox network");
  return connect_loopback(port);
}

}  // namespace

// Through the namespace fd the sandbox holds, never /proc/<pid>/ns/net: once
// init is gone its number may name a host process. A dead sandbox's
// namespace has nothing listening: ECONNREFUSED.
Result<UniqueFd> connect_tcp(const Sandbox& sb, uint16_t port) {
  const int net_ns = sb.net_ns_fd();
  if (net_ns < 0) return Error{"connect", ESRCH, "the sandbox has no network namespace"};
  Result<UniqueFd> result = Error{"connect", EINVAL, "not attempted"};
  std::thread worker([&] { result = connect_in_namespace(net_ns, port); });
  worker.join();
  return result;
}

}  // namespace abx::runtime
