#include "agent/output_relay.h"

#include <fcntl.h>  // tee, SPLICE_F_NONBLOCK (_GNU_SOURCE)
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace abx::agent {
namespace {

constexpr size_t kWindow = 256 * 1024;
constexpr size_t kReadBytes = 128 * 1024;

void set_nonblocking(int fd) {
  if (fd < 0) return;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

OutputRelay::OutputRelay(size_t capacity, UniqueFd out_source, UniqueFd out_sink,
                         UniqueFd err_source, UniqueFd err_sink)
    : ring_(capacity),
      window_(std::min(kWindow, capacity)),
      streams_{Stream{OutputStream::kStdout, std::move(out_source), std::move(out_sink)},
               Stream{OutputStream::kStderr, std::move(err_source), std::move(err_sink)}} {
  for (Stream& stream : streams_) {
    set_nonblocking(stream.source.get());
    set_nonblocking(stream.sink.get());
  }
}

// Held, it reads only while every stream's unforwarded bytes fit the
// window, so a slow reader of one stream never lets the other's output push
// its bytes out of the ring; followed, while what the follower has not had
// fits it.
bool OutputRelay::wants_input(const Stream& stream) const {
  if (!stream.source.valid()) return false;
  if (follower_ >= 0 && ring_.end() - std::max(delivered_, ring_.start()) >= window_) return false;
  if (!held_) return true;
  for (const Stream& other : streams_)
    if (other.sink.valid() && ring_.end() - other.cursor >= window_) return false;
  return true;
}

void OutputRelay::add_pollfds(std::vector<pollfd>* fds) const {
  for (const Stream& stream : streams_) {
    if (wants_input(stream)) fds->push_back({stream.source.get(), POLLIN, 0});
    if (stream.sink.valid() && stream.cursor < ring_.end())
      fds->push_back({stream.sink.get(), POLLOUT, 0});
  }
}

void OutputRelay::handle(const pollfd& ready) {
  for (Stream& stream : streams_) {
    if (ready.fd == stream.source.get() && stream.source.valid()) read_source(stream);
    if (ready.fd == stream.sink.get() && stream.sink.valid()) forward(stream);
  }
}

void OutputRelay::drain() {
  for (Stream& stream : streams_) read_source(stream);
}

// Reads while the source has bytes and the window allows, forwarding as it
// goes; EOF closes the source.
void OutputRelay::read_source(Stream& stream) {
  static char buffer[kReadBytes];
  while (wants_input(stream)) {
    ssize_t n = tee_source(stream, buffer, sizeof buffer);
    if (n == 0) n = ::read(stream.source.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno != EAGAIN)) stream.source.reset();
    if (n <= 0) break;
    ring_.append(stream.name, std::string_view(buffer, static_cast<size_t>(n)));
    forward(stream);
    // A short read emptied the pipe: poll says when there is more, which
    // saves a read that would only say EAGAIN.
    if (static_cast<size_t>(n) < sizeof buffer) return;
  }
  forward(stream);
}

// Caught up with its sink, a stream's new output goes to the daemon's pipe
// by reference (tee: no copy), and only the ring's copy is read. Returns
// the bytes read that way (already forwarded), or 0 when the plain read is
// needed: nothing there, the sink full, or a source that is no pipe (a pty).
ssize_t OutputRelay::tee_source(Stream& stream, char* buffer, size_t size) {
  if (!stream.teeable || !stream.sink.valid() || stream.cursor != ring_.end()) return 0;
  const ssize_t teed = ::tee(stream.source.get(), stream.sink.get(), size, SPLICE_F_NONBLOCK);
  if (teed < 0 && errno == EINVAL) stream.teeable = false;
  if (teed <= 0) return 0;
  size_t got = 0;  // what tee saw is in the pipe: the read finds all of it
  while (got < static_cast<size_t>(teed)) {
    const ssize_t n = ::read(stream.source.get(), buffer + got, static_cast<size_t>(teed) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  stream.cursor = ring_.end() + got;
  return static_cast<ssize_t>(got);
}

void OutputRelay::forward(Stream& stream) {
  if (stream.cursor < ring_.start()) {  // dropped before any daemon took it
    dropped_ += ring_.start() - stream.cursor;
    stream.cursor = ring_.start();
  }
  while (stream.sink.valid()) {
    uint64_t at = 0;
    const std::string_view bytes = ring_.next_of(stream.name, stream.cursor, &at);
    stream.cursor = at;
    if (bytes.empty()) break;
    const ssize_t n = ::write(stream.sink.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) {  // no reader will ever come (EPIPE)
      stream.sink.reset();
      break;
    }
    stream.cursor += static_cast<uint64_t>(n);
  }
  if (!stream.source.valid() && stream.cursor >= ring_.end()) stream.sink.reset();  // EOF
}

bool OutputRelay::finished() const {
  return std::none_of(streams_.begin(), streams_.end(), [](const Stream& stream) {
    return stream.source.valid() || stream.sink.valid();
  });
}

// FIONREAD on a pipe or a terminal's master; one that cannot say counts as
// empty (its end is not held back for good).
bool OutputRelay::end_known() const {
  if (!wait_status_) return false;
  return std::all_of(streams_.begin(), streams_.end(), [](const Stream& stream) {
    int waiting = 0;
    return !stream.source.valid() || ::ioctl(stream.source.get(), FIONREAD, &waiting) != 0 ||
           waiting <= 0;
  });
}

proto::ReadReplyView OutputRelay::slice_views(uint64_t offset, size_t max) const {
  proto::ReadReplyView reply;
  reply.start = ring_.start();
  reply.end = ring_.end();
  reply.chunks = ring_.views(offset, max);
  reply.ended = end_known();
  reply.wait_status = wait_status_.value_or(0);
  return reply;
}

OutputSlice OutputRelay::slice(uint64_t offset, size_t max) const {
  const proto::ReadReplyView view = slice_views(offset, max);
  OutputSlice slice{view.start, view.end, {}, view.ended, view.wait_status};
  for (const auto& chunk : view.chunks)
    slice.chunks.push_back({chunk.stream, chunk.offset, std::string(chunk.bytes)});
  return slice;
}

}  // namespace abx::agent
