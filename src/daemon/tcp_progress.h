// How much of what was sent a TCP peer has acknowledged. The send timeout
// asks, to tell a client that reads slowly (still acknowledging) from one
// that stopped reading.
#pragma once

#include <cstdint>
#include <optional>

namespace abx::daemon {

// Bytes the peer of the connected TCP socket `fd` has acknowledged so far,
// or nothing when the kernel does not say.
std::optional<uint64_t> tcp_bytes_acked(int fd);

}  // namespace abx::daemon
