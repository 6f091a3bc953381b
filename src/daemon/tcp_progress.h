// What the kernel knows of a TCP peer: how much of what was sent it has
// acknowledged (the send timeout asks, to tell a client that reads slowly
// from one that stopped reading), and whether it is still there at all.
#pragma once

#include <cstdint>
#include <optional>

namespace abx::daemon {

// Bytes the peer of the connected TCP socket `fd` has acknowledged so far,
// or nothing when the kernel does not say.
std::optional<uint64_t> tcp_bytes_acked(int fd);

// For a connection that may rightly stay silent for hours (a WebSocket
// through the port proxy): keepalive probes after a minute of silence, and
// data the peer has not acknowledged for two minutes ends it, so a peer that
// vanished without a FIN does not hold the daemon's sockets for ever.
void watch_for_dead_peer(int fd);

}  // namespace abx::daemon
