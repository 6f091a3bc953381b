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
#include <vector>

#include "egress/http_message.h"
#include "egress/policy.h"

namespace abx::egress {

// Resolves a secret's name to its value for the header `header`; nullopt:
// unknown, or not to be sent in that header.
using SecretLookup =
    std::function<std::optional<std::string>(const std::string& name, const std::string& header)>;

// One request head the rewriter passed or refused, for the flight record:
// its method and path (the query left out: it may carry tokens), the names
// of the secrets put in (never their values), and why it was refused ("": sent).
struct RequestNote {
  std::string method, path;
  std::vector<std::string> secrets;
  std::string refusal;
};
using RequestObserver = std::function<void(const RequestNote&)>;

class RequestRewriter : public HttpFilter {
 public:
  // `host`: the name the connection was allowed for; a request naming another
  // host is refused (its headers would go to the wrong server).
  // `secrets_allowed`: false refuses requests whose rule references a secret
  // (plain HTTP to an address the name does not resolve to).
  // `log`: where each request's kind and the secrets sent are noted for the
  // response filter; null: nowhere. `observe`: told of each request head.
  RequestRewriter(HostRule rule, std::string host, SecretLookup secret, bool secrets_allowed,
                  ExchangeLog* log = nullptr, RequestObserver observe = nullptr);

  bool feed(std::string_view in, std::string& out) override;
  const std::string& error_response() const override { return error_; }
  // A body's rest, or a little while heads are read, so that one read of many
  // tiny pipelined requests cannot multiply into megabytes of added headers.
  size_t read_limit() const override;

 private:
  bool on_head(std::string_view head, std::string& out);
  bool rewrite_head(std::string_view head, std::string& out);
  bool add_rule_headers(std::string& out);
  void note(std::string_view request_line);
  bool fail(int status, std::string_view reason);

  HostRule rule_;
  std::string host_;
  SecretLookup secret_;
  bool secrets_allowed_;
  ExchangeLog* log_;
  RequestObserver observe_;
  RequestNote note_;  // of the head being rewritten
  bool tunnel_ = false;
  std::string pending_;  // an incomplete head
  BodyPass body_;
  std::string error_;
};

}  // namespace abx::egress
