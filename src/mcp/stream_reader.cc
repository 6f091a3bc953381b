#include "mcp/stream_reader.h"

#include <poll.h>

namespace abx::mcp {
namespace {

constexpr int kCancelCheckMs = 100;

}  // namespace

Result<std::string> read_unless_cancelled(http::ResponseStream& stream, const CancelFlag& cancel) {
  while (!stream.has_buffered() && !stream.done()) {
    if (cancel) return Error{"cancelled by the client", ECANCELED};
    pollfd fd{stream.fd(), POLLIN, 0};
    const int ready = ::poll(&fd, 1, kCancelCheckMs);
    if (ready < 0 && errno != EINTR) return Error::from_errno("poll the daemon's stream");
    if (ready > 0) break;
  }
  if (cancel) return Error{"cancelled by the client", ECANCELED};
  return stream.read_some();
}

}  // namespace abx::mcp
