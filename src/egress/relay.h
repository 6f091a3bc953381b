// Moves bytes both ways between a sandbox's connection and its upstream until
// both sides are done, one side fails, or neither moves for `idle`. Half
// closes pass through. Bytes can go through a filter in either direction.
#pragma once

#include <chrono>
#include <cstdint>

#include "egress/http_message.h"
#include "egress/stream.h"

namespace abx::egress {

// Bytes written each way: `out` to the upstream, `in` to the client.
struct Relayed {
  uint64_t out = 0, in = 0;
};

// Returns when the connection is over; the caller closes the sockets.
// `requests` filters client-to-upstream bytes, `responses` the others; null: none.
Relayed relay(Stream& client, Stream& upstream, HttpFilter* requests, HttpFilter* responses,
              std::chrono::milliseconds idle);

}  // namespace abx::egress
