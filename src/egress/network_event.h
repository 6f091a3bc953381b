// What the egress services tell their owner about each decision they make,
// for the sandbox's flight record: a DNS name asked, a connection allowed or
// refused (and what it moved when it closed), an HTTP request through the
// intercepting proxy. Plain data: egress/ knows nothing of where it goes.
// Secrets appear by name only; no value is ever put in one of these.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace abx::egress {

struct NetworkEvent {
  enum class Kind { kDns, kConnection, kRequest };
  Kind kind = Kind::kDns;
  std::string host;  // the DNS name; the SNI or Host; "" when the connection named none
  uint32_t ip = 0;   // host byte order; 0 for DNS
  uint16_t port = 0;
  bool allowed = false;
  std::string reason;                    // the rule that decided, or why it was refused
  uint64_t bytes_out = 0, bytes_in = 0;  // a connection's, sandbox → world and back
  int64_t duration_ms = 0;               // a connection's
  uint64_t repeats = 0;      // DNS: the same question asked this many times more, not recorded
  uint64_t held_back = 0;    // connection, request: this many before it over the rate, not recorded
  std::string method, path;  // a request's
  std::vector<std::string> secrets;  // a request's: names of the secrets put in
};

// Called on the egress services' threads; must be thread-safe and quick.
using NetworkRecorder = std::function<void(uint32_t source_ip, const NetworkEvent&)>;

const char* kind_name(NetworkEvent::Kind kind);  // "dns", "connection", "request"

}  // namespace abx::egress
