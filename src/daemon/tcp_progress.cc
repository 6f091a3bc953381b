// A file of its own: <linux/tcp.h> has tcpi_bytes_acked, which glibc's
// struct tcp_info lacks, and it clashes with the <netinet/tcp.h> that Asio
// includes.
#include "daemon/tcp_progress.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace abx::daemon {

std::optional<uint64_t> tcp_bytes_acked(int fd) {
  tcp_info info{};
  socklen_t size = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) return std::nullopt;
  // An older kernel fills less of the struct.
  if (size < offsetof(tcp_info, tcpi_bytes_acked) + sizeof info.tcpi_bytes_acked) {
    return std::nullopt;
  }
  return info.tcpi_bytes_acked;
}

void watch_for_dead_peer(int fd) {
  const int on = 1, idle_s = 60, interval_s = 15, probes = 4;
  const unsigned int unacked_ms = 120'000;
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacked_ms, sizeof unacked_ms);
}

}  // namespace abx::daemon
