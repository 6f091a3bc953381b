// The proxy's way to the destination a sandbox dialled: straight to its
// address, or through the policy's SOCKS5 proxy (optionally over TLS). Every
// address dialled is checked against the always-denied set first, and a SOCKS
// proxy that cannot be used fails the connection: never a direct fallback.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <functional>
#include <memory>

#include "common/error.h"
#include "egress/policy.h"
#include "egress/stream.h"

namespace abx::egress {

// Connects the non-blocking TCP socket `fd` to `ip:port` (host byte order).
Status connect_tcp(int fd, uint32_t ip, uint16_t port, Clock::time_point deadline);

// A tunnel to the destination over the caller's socket: the stream over it
// (TLS to the SOCKS proxy when it asks for TLS).
struct Tunnel {
  std::unique_ptr<PlainStream> plain;
  std::unique_ptr<TlsStream> tls;
  Stream& stream() { return tls ? static_cast<Stream&>(*tls) : *plain; }
};

struct DialOptions {
  std::function<bool(uint32_t)> always_denied;
  int socket = -1;  // a fresh non-blocking TCP socket the caller owns (and may shut down to cut)
  Clock::time_point deadline;
};

Result<Tunnel> dial_direct(uint32_t ip, uint16_t port, const DialOptions& options);
// SOCKS5 CONNECT to ip:port through `proxy` (RFC 1928, RFC 1929 when it has a username).
Result<Tunnel> dial_socks5(const SocksProxy& proxy, uint32_t ip, uint16_t port,
                           const DialOptions& options);

}  // namespace abx::egress
