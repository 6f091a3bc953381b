#include "agent/tcp_clients.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>

namespace abx::agent {

void TcpClients::add_pollfds(std::vector<pollfd>* fds,
                             const std::function<bool(int)>& paused) const {
  fds->push_back({listen_fd_, POLLIN, 0});
  for (const auto& [fd, connection] : connections_)
    if (!paused(fd)) fds->push_back({fd, POLLIN, 0});
}

void TcpClients::accept_one() {
  UniqueFd fd(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return;
  const timeval send_within{std::chrono::seconds(kSendWithin).count(), 0};
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &send_within, sizeof send_within);
  const size_t waiting = static_cast<size_t>(
      std::count_if(connections_.begin(), connections_.end(),
                    [](const auto& entry) { return !entry.second.authenticated; }));
  if (waiting >= kMaxUnauthenticated) evict_oldest_unauthenticated();
  const int key = fd.get();
  connections_[key] = Connection{std::move(fd), {}, false, Clock::now() + kHelloWithin};
}

void TcpClients::evict_oldest_unauthenticated() {
  auto oldest = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it)
    if (!it->second.authenticated &&
        (oldest == connections_.end() || it->second.hello_by < oldest->second.hello_by))
      oldest = it;
  if (oldest != connections_.end()) connections_.erase(oldest);
}

bool TcpClients::authenticate(Connection& connection, const std::string& frame) const {
  proto::Hello hello;
  if (!proto::decode(frame, &hello) || hello.version != proto::kProtocolVersion ||
      !proto::same_token(hello.token, token_))
    return false;
  connection.authenticated = true;
  return true;
}

std::vector<int> TcpClients::handle(
    const pollfd& ready, const std::function<void(int fd, const std::string& request)>& serve,
    const std::function<bool(int)>& paused) {
  if (ready.fd == listen_fd_) {
    accept_one();
    return {};
  }
  auto it = connections_.find(ready.fd);
  if (it == connections_.end()) return {};
  char buf[64 * 1024];
  const ssize_t n = ::recv(ready.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return {};
  if (n <= 0) {
    connections_.erase(it);
    return {ready.fd};
  }
  it->second.frames.feed(buf, static_cast<size_t>(n));
  std::string frame;
  for (;;) {
    const auto next = it->second.frames.next(&frame);
    if (next == proto::FrameReader::Next::kMore) return {};
    const bool hello = !it->second.authenticated;
    if (next == proto::FrameReader::Next::kTooBig || (hello && !authenticate(it->second, frame)) ||
        (!hello && paused(ready.fd))) {
      connections_.erase(it);
      return {ready.fd};
    }
    if (hello) continue;
    serve(ready.fd, frame);
    // serve may have closed it (and dropped it itself) or handed it on.
    it = connections_.find(ready.fd);
    if (it == connections_.end()) return {};
  }
}

Status TcpClients::reply(int fd, const std::string& message) const {
  if (!connections_.contains(fd)) return Error{"reply", EBADF, {}};
  return proto::send_frame(fd, message);
}

std::vector<int> TcpClients::close_late(Clock::time_point now) {
  std::vector<int> closed;
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->second.authenticated && it->second.hello_by <= now) {
      closed.push_back(it->first);
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
  return closed;
}

std::optional<TcpClients::Clock::time_point> TcpClients::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& [fd, connection] : connections_)
    if (!connection.authenticated && (!next || connection.hello_by < *next))
      next = connection.hello_by;
  return next;
}

UniqueFd TcpClients::release(int fd) {
  auto node = connections_.extract(fd);
  return node ? std::move(node.mapped().fd) : UniqueFd();
}

}  // namespace abx::agent
