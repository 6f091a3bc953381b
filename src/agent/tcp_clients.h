// The agent's TCP connections (InitConfig::tcp_port), for a daemon that is
// not on the sandbox's host. Code inside the sandbox can reach the port too,
// so nothing is served before a Hello with the sandbox's token, a connection
// gets kHelloWithin to show one, and PID 1 never blocks on a reader: frames
// arrive in pieces into a buffer. Replies are written blocking, bounded by
// kSendWithin, to an authenticated (the daemon's) connection only.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/protocol.h"
#include "common/unique_fd.h"

namespace abx::agent {

class TcpClients {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kHelloWithin = std::chrono::seconds(5);
  static constexpr auto kSendWithin = std::chrono::seconds(5);
  // Connections that have not shown the token yet; a new one beyond this
  // closes the oldest, so code in the sandbox cannot hold the daemon out.
  static constexpr size_t kMaxUnauthenticated = 16;

  TcpClients(int listen_fd, std::string token) : listen_fd_(listen_fd), token_(std::move(token)) {}

  // The listener and every connection but those `paused` (one waiting for
  // its spawn's answer is not read meanwhile, as on the control socket).
  void add_pollfds(std::vector<pollfd>* fds, const std::function<bool(int)>& paused) const;
  bool owns(int fd) const { return fd == listen_fd_ || connections_.contains(fd); }
  // One ready pollfd of ours: accepts, or reads and hands each request frame
  // of an authenticated connection to `serve`. A frame that comes while the
  // connection is `paused` (its request not answered yet: one at a time) is
  // a broken client: it is closed. Returns the fds it closed (not those
  // `serve` closed or released).
  std::vector<int> handle(const pollfd& ready,
                          const std::function<void(int fd, const std::string& request)>& serve,
                          const std::function<bool(int)>& paused);
  Status reply(int fd, const std::string& message) const;
  void close(int fd) { connections_.erase(fd); }
  // The connection leaves (a file worker takes it over); bytes it sent past
  // its last request are dropped, so a client waits for the first answer.
  UniqueFd release(int fd);
  // Closes connections whose Hello is late; returns their fds.
  std::vector<int> close_late(Clock::time_point now);
  std::optional<Clock::time_point> next_deadline() const;

 private:
  struct Connection {
    UniqueFd fd;
    proto::FrameReader frames;
    bool authenticated = false;
    Clock::time_point hello_by;
  };
  void accept_one();
  bool authenticate(Connection& connection, const std::string& frame) const;
  void evict_oldest_unauthenticated();

  int listen_fd_;
  std::string token_;
  std::map<int, Connection> connections_;
};

}  // namespace abx::agent
