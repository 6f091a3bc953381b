#include "egress/relay.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <climits>
#include <string>
#include <vector>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx::egress {
namespace {

constexpr size_t kBuffer = 64 * 1024;  // per direction; a connection holds at most a few of these

// One direction: bytes read from `from`, possibly rewritten, waiting to be written to `to`.
struct Direction {
  Stream& from;
  Stream& to;
  HttpFilter* rewriter = nullptr;
  std::string pending;
  size_t written = 0;  // of pending
  uint64_t total = 0;  // bytes written to `to` in all
  bool eof = false, shut = false, failed = false;
  std::string refusal;  // the filter's answer to the client, when it refused

  size_t backlog() const { return pending.size() - written; }
  bool can_read() const { return !eof && !failed && backlog() < kBuffer; }
  bool done() const { return shut || failed; }

  // Reads once and writes once; true when bytes moved.
  bool step(std::vector<char>& buffer) {
    bool moved = false;
    if (can_read()) {
      const size_t want =
          rewriter ? std::min(buffer.size(), rewriter->read_limit()) : buffer.size();
      const IoResult r = from.read(buffer.data(), want);
      if (r.status == Io::kOk) {
        moved = true;
        if (written == pending.size()) pending.clear(), written = 0;
        const std::string_view bytes(buffer.data(), r.bytes);
        if (rewriter == nullptr) {
          pending.append(bytes);
        } else if (!rewriter->feed(bytes, pending)) {
          refusal = rewriter->error_response();
          failed = true;
        }
      } else if (r.status == Io::kEof) {
        eof = true;
        moved = true;
      } else if (r.status == Io::kError) {
        failed = true;
      }
    }
    while (!failed && backlog() > 0) {
      const IoResult w = to.write(pending.data() + written, backlog());
      if (w.status == Io::kOk) {
        written += w.bytes;
        total += w.bytes;
        moved = true;
      } else {
        if (w.status == Io::kError) failed = true;
        break;
      }
    }
    if (eof && backlog() == 0 && !shut && !failed) {
      to.shutdown_write();
      shut = true;
      moved = true;
    }
    return moved;
  }
};

void add_events(std::vector<pollfd>& fds, int fd, short events) {
  for (pollfd& p : fds)
    if (p.fd == fd) {
      p.events = static_cast<short>(p.events | events);
      return;
    }
  fds.push_back(pollfd{fd, events, 0});
}

// One direction of a socket-to-socket relay through a pipe: the kernel moves
// the bytes (splice(2)), none pass through user space.
struct Spliced {
  int from, to;
  UniqueFd read_end, write_end;
  size_t held = 0;     // bytes in the pipe
  uint64_t total = 0;  // bytes spliced into `to`
  bool eof = false, shut = false, failed = false;
  static constexpr size_t kPipe = 256 * 1024;

  bool open() {
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
    ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(kPipe));  // best effort: 64 KiB otherwise
    return true;
  }

  bool step() {
    bool moved = false;
    constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
    if (!eof && !failed && held < kPipe) {
      const ssize_t n = ::splice(from, nullptr, write_end.get(), nullptr, kPipe - held, kFlags);
      if (n > 0) held += static_cast<size_t>(n);
      if (n == 0) eof = true;
      if (n < 0 && errno != EAGAIN && errno != EINTR) failed = true;
      moved = n >= 0;
    }
    while (held > 0 && !failed) {
      const ssize_t n = ::splice(read_end.get(), nullptr, to, nullptr, held, kFlags);
      if (n <= 0) {
        if (n < 0 && errno != EAGAIN && errno != EINTR) failed = true;
        break;
      }
      held -= static_cast<size_t>(n);
      total += static_cast<uint64_t>(n);
      moved = true;
    }
    if (eof && held == 0 && !shut && !failed) {
      ::shutdown(to, SHUT_WR);
      shut = true;
      moved = true;
    }
    return moved;
  }
};

// splice(2) into a socket the peer closed raises SIGPIPE (it has no
// MSG_NOSIGNAL): relays run under SigpipeBlocked (common/fd_io.h).

// The relay for two plain sockets; false when no pipes could be had (then copy instead).
bool splice_relay(int client, int upstream, std::chrono::milliseconds idle, Relayed& relayed) {
  Spliced out{client, upstream, {}, {}}, in{upstream, client, {}, {}};
  if (!out.open() || !in.open()) return false;
  const SigpipeBlocked blocked;
  auto last_progress = Clock::now();
  while (!(out.shut && in.shut)) {
    bool moved = out.step();
    moved = in.step() || moved;
    if (out.failed || in.failed) break;
    if (moved) {
      last_progress = Clock::now();
      continue;
    }
    std::vector<pollfd> fds;
    for (Spliced* d : {&out, &in}) {
      if (!d->eof && d->held < Spliced::kPipe) add_events(fds, d->from, POLLIN);
      if (d->held > 0) add_events(fds, d->to, POLLOUT);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(last_progress + idle - Clock::now());
    if (left.count() <= 0 || fds.empty()) break;
    if (::poll(fds.data(), fds.size(),
               static_cast<int>(std::min<long long>(left.count(), INT_MAX))) < 0 &&
        errno != EINTR)
      break;
  }
  relayed = Relayed{out.total, in.total};
  return true;
}

}  // namespace

Relayed relay(Stream& client, Stream& upstream, HttpFilter* requests, HttpFilter* responses,
              std::chrono::milliseconds idle) {
  Relayed relayed;
  if (requests == nullptr && responses == nullptr && dynamic_cast<PlainStream*>(&client) &&
      dynamic_cast<PlainStream*>(&upstream) &&
      splice_relay(client.fd(), upstream.fd(), idle, relayed))
    return relayed;
  Direction out{client, upstream, requests, {}, 0, 0, false, false, false, {}};
  Direction in{upstream, client, responses, {}, 0, 0, false, false, false, {}};
  std::vector<char> buffer(kBuffer);
  auto last_progress = Clock::now();
  while (!(out.done() && in.done())) {
    bool moved = out.step(buffer);
    moved = in.step(buffer) || moved;
    if (out.failed || in.failed) break;
    if (moved) {
      last_progress = Clock::now();
      continue;
    }
    // Decrypted bytes waiting above a socket: read them now, poll would not say so.
    if ((out.can_read() && client.buffered()) || (in.can_read() && upstream.buffered())) continue;
    std::vector<pollfd> fds;
    for (Direction* d : {&out, &in}) {
      if (d->can_read()) add_events(fds, d->from.fd(), d->from.read_wants());
      if (d->backlog() > 0) add_events(fds, d->to.fd(), d->to.write_wants());
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(last_progress + idle - Clock::now());
    if (left.count() <= 0 || fds.empty()) break;
    if (::poll(fds.data(), fds.size(),
               static_cast<int>(std::min<long long>(left.count(), INT_MAX))) < 0 &&
        errno != EINTR)
      break;
  }
  // Either filter's answer goes to the client (a response filter's after what
  // already passed: the connection ends with it either way).
  if (const std::string& refusal = out.refusal.empty() ? in.refusal : out.refusal;
      !refusal.empty()) {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    write_all(client, refusal, deadline);
    client.shutdown_write();
  }
  return Relayed{out.total, in.total};
}

}  // namespace abx::egress
