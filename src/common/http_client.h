// A small synchronous HTTP/1.1 client for the CLI: whole-body requests,
// streamed (chunked) request bodies and response bodies read as they arrive.
// Boost.Beast stays inside http_client.cc so includers compile fast.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace abx::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The value of `name` in `headers` (case-insensitive), "" when absent.
std::string find_header(const Headers& headers, std::string_view name);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string url_encode(std::string_view text);

struct Url {
  std::string host;
  std::string port;
  std::string prefix;  // path the base URL carries, without a trailing '/'
  bool tls = false;    // https: the server's certificate is verified, with its name

  // "http://host[:port][/prefix]" or "https://host[:port][/prefix]".
  static Result<Url> parse(std::string_view text);
  std::string str() const;
  std::string authority() const;  // host:port, an IPv6 host in brackets
};

struct Request {
  std::string method = "GET";
  std::string target;  // path and query, appended to the base URL's prefix
  Headers headers;
  std::string body;
};

struct Response {
  int status = 0;
  Headers headers;
  std::string body;
  std::string header(std::string_view name) const { return find_header(headers, name); }
};

// Produces the next piece of a streamed request body; an empty string ends it.
using BodySource = std::function<Result<std::string>()>;

// A body read from `fd` (which must outlive it) in `chunk`-byte pieces;
// `on_piece` sees each piece's size (for a progress bar). `what` names the
// source in errors.
BodySource fd_body(int fd, std::string what, size_t chunk,
                   std::function<void(size_t)> on_piece = {});

// A response whose header has arrived and whose body is read piece by piece.
class ResponseStream {
 public:
  struct Impl;
  explicit ResponseStream(std::unique_ptr<Impl> impl);
  ~ResponseStream();

  int status() const;
  std::string header(std::string_view name) const;
  Headers headers() const;
  // Poll this for POLLIN before read_some() unless has_buffered() is true.
  int fd() const;
  bool has_buffered() const;
  // The body bytes that arrived next (possibly empty); blocks until the
  // socket delivers something. Returns "" once done() is true.
  Result<std::string> read_some();
  bool done() const;
  // Reads to the end and returns what is left of the body.
  Result<std::string> read_all();

 private:
  std::unique_ptr<Impl> impl_;
};

class Client {
 public:
  explicit Client(Url base) : base_(std::move(base)) {}

  // One request on a fresh connection. timeout 0 means no limit.
  Result<Response> send(const Request& request,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) const;
  // Sends the request (its body from `body_source` with chunked encoding when
  // given) and returns once the response header has arrived.
  Result<std::unique_ptr<ResponseStream>> open(
      const Request& request, const BodySource* body_source = nullptr,
      std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) const;
  const Url& base() const { return base_; }

 private:
  Url base_;
};

}  // namespace abx::http
