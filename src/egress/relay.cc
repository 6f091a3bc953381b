#include "egress/relay.h"

#include <poll.h>

#include <climits>
#include <string>
#include <vector>

namespace abx::egress {
namespace {

constexpr size_t kBuffer = 256 * 1024;

// One direction: bytes read from `from`, possibly rewritten, waiting to be written to `to`.
struct Direction {
  Stream& from;
  Stream& to;
  RequestRewriter* rewriter = nullptr;
  std::string pending;
  size_t written = 0;  // of pending
  bool eof = false, shut = false, failed = false;
  std::string refusal;  // the rewriter's answer to the client, when it refused

  size_t backlog() const { return pending.size() - written; }
  bool done() const { return shut || failed; }

  // Reads once and writes once; true when bytes moved.
  bool step(std::vector<char>& buffer) {
    bool moved = false;
    if (!eof && !failed && backlog() < kBuffer) {
      const IoResult r = from.read(buffer.data(), buffer.size());
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

}  // namespace

void relay(Stream& client, Stream& upstream, RequestRewriter* rewriter,
           std::chrono::milliseconds idle) {
  Direction out{client, upstream, rewriter, {}, 0, false, false, false, {}};
  Direction in{upstream, client, nullptr, {}, 0, false, false, false, {}};
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
    if (client.buffered() || upstream.buffered()) continue;
    std::vector<pollfd> fds;
    for (Direction* d : {&out, &in}) {
      if (!d->eof && d->backlog() < kBuffer) add_events(fds, d->from.fd(), d->from.read_wants());
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
  if (!out.refusal.empty()) {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    write_all(client, out.refusal, deadline);
    client.shutdown_write();
  }
}

}  // namespace abx::egress
