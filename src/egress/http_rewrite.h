// Sets a host rule's headers on every request of an HTTP/1.1 stream (the
// client-to-server direction), passing bodies through by Content-Length or
// chunked framing. Works on whatever bytes arrive: heads are bounded (64 KiB),
// and anything ambiguous (two lengths, obsolete line folding) ends the stream
// with an error response rather than being forwarded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "egress/policy.h"

namespace abx::egress {

inline constexpr size_t kMaxHead = 64 * 1024;

// Resolves a secret's name to its value; nullopt: unknown.
using SecretLookup = std::function<std::optional<std::string>(const std::string& name)>;

class RequestRewriter {
 public:
  // `host`: the name the connection was allowed for; a request naming another
  // host is refused (its headers would go to the wrong server).
  // `secrets_allowed`: false refuses requests whose rule references a secret
  // (plain HTTP to an address the name does not resolve to).
  RequestRewriter(HostRule rule, std::string host, SecretLookup secret, bool secrets_allowed);

  // Consumes bytes from the client, appends what goes upstream to `out`.
  // False: the stream must end; `error_response()` is what the client gets.
  bool feed(std::string_view in, std::string& out);
  const std::string& error_response() const { return error_; }
  // How many bytes the next feed may take: a body's rest, or a little while
  // heads are read, so that one read of many tiny pipelined requests cannot
  // multiply into megabytes of added headers.
  size_t read_limit() const;

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailer, kTunnel };
  bool on_head(std::string_view head, std::string& out);
  bool fail(int status, std::string_view reason);
  std::string_view take_line(std::string_view& in, bool& complete);

  HostRule rule_;
  std::string host_;
  SecretLookup secret_;
  bool secrets_allowed_;
  State state_ = State::kHead;
  std::string pending_;     // an incomplete head or chunk-size/trailer line
  uint64_t remaining_ = 0;  // body or chunk bytes still to pass
  std::string error_;
};

// Whether `value` may be sent as a header value (no CR, LF or NUL).
bool is_header_value(std::string_view value);
// Whether `name` is an HTTP token.
bool is_header_name(std::string_view name);

}  // namespace abx::egress
