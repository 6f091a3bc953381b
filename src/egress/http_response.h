// The server-to-sandbox direction of a stream whose requests carry secrets:
// a response header whose value holds a secret the proxy sent (a server that
// reflects Origin into Access-Control-Allow-Origin, an error that quotes the
// Authorization it got), or a trailer field that holds one, is removed before
// the sandbox sees it. Bodies pass
// unread: what a server echoes in a body is its own doing (the README says so).
#pragma once

#include <string>
#include <string_view>

#include "egress/http_message.h"

namespace abx::egress {

class ResponseFilter : public HttpFilter {
 public:
  // `log`: what the request filter of the same connection noted.
  explicit ResponseFilter(ExchangeLog& log)
      : log_(log), body_([this](std::string_view line) { return echoes_secret(line); }) {}

  bool feed(std::string_view in, std::string& out) override;
  const std::string& error_response() const override { return error_; }
  size_t read_limit() const override { return 64 * 1024; }

 private:
  bool on_head(std::string_view head, std::string& out);
  bool echoes_secret(std::string_view value) const;
  bool fail();

  ExchangeLog& log_;
  bool until_close_ = false;  // a tunnel, or a body that ends with the connection
  std::string pending_;       // an incomplete head
  BodyPass body_;
  std::string error_;
};

}  // namespace abx::egress
