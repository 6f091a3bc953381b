#include "runtime/sandbox_net.h"

#include <arpa/inet.h>
#include <fcntl.h>
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
Result<UniqueFd> connect_in_namespace(const std::string& ns_path, uint16_t port) {
  UniqueFd ns(::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns.valid()) return Error::from_errno("open network namespace", ns_path);
  if (::setns(ns.get(), CLONE_NEWNET) != 0) return Error::from_errno("setns", ns_path);
  return connect_loopback(port);
}

}  // namespace

Result<UniqueFd> connect_tcp(const Sandbox& sb, uint16_t port) {
  const std::string ns_path = "/proc/" + std::to_string(sb.record().init_pid) + "/ns/net";
  Result<UniqueFd> result = Error{"connect", EINVAL, "not attempted"};
  std::thread worker([&] { result = connect_in_namespace(ns_path, port); });
  worker.join();
  return result;
}

}  // namespace abx::runtime
