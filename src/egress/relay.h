// Moves bytes both ways between a sandbox's connection and its upstream until
// both sides are done, one side fails, or neither moves for `idle`. Half
// closes pass through. Client-to-upstream bytes can go through a rewriter.
#pragma once

#include <chrono>

#include "egress/http_rewrite.h"
#include "egress/stream.h"

namespace abx::egress {

// Returns when the connection is over; the caller closes the sockets.
void relay(Stream& client, Stream& upstream, RequestRewriter* rewriter,
           std::chrono::milliseconds idle);

}  // namespace abx::egress
