// One HTTP request/response as the routes see it. Keeps Boost.Beast out of
// every file but http_server.cc: routes only need asio's awaitable.
#pragma once

// clang-format off
#include <utility>  // awaitable.hpp uses std::exchange without including it
#include <boost/asio/awaitable.hpp>
// clang-format on
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace abx::daemon::http {

template <class T>
using Task = boost::asio::awaitable<T>;

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;
  std::string target;                          // as sent, with the query
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // percent-decoded
  std::map<std::string, std::string> headers;  // names lower-cased

  // Value of a header (name in lower case), or "" when absent.
  std::string header(const std::string& lower_name) const;
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual const Request& request() const = 0;

  // The next piece of the request body (chunked or not); "" once it is all read.
  virtual Task<std::string> read_body_some() = 0;

  // A whole response with a body.
  virtual Task<void> respond(int status, std::string content_type, std::string body,
                             Headers extra = {}) = 0;

  // A response sent piece by piece, each piece flushed at once: chunked, or
  // with Content-Length when `length` is known. A sized body is cut at
  // `length`, and one that ends short closes the connection (the client sees
  // a short body, never the start of a next response).
  virtual Task<void> start_stream(int status, std::string content_type, Headers extra = {},
                                  std::optional<uint64_t> length = {}) = 0;
  // False when the client has gone away.
  virtual Task<bool> write_chunk(std::string data) = 0;
  virtual Task<void> finish_stream() = 0;

  // The request asked to change protocols (RFC 9110 §7.8: `Connection: upgrade`
  // and an `Upgrade` header), as a WebSocket handshake does.
  bool wants_upgrade() const;
  // Answers 101 Switching Protocols with `extra`; from then on the connection
  // carries the new protocol's bytes through read_raw_some and write_raw, and
  // it ends with the handler (no further HTTP request on it).
  virtual Task<void> switch_protocols(Headers extra) = 0;
  // The client's next bytes after the switch; "" once it closed or close_raw ran.
  virtual Task<std::string> read_raw_some() = 0;
  // False when the client has gone away.
  virtual Task<bool> write_raw(std::string data) = 0;
  // Ends the connection: a read_raw_some under way returns "".
  virtual void close_raw() = 0;

  // The caller proved a credential (an API key, a dashboard session, a
  // sandbox's access token): the request may use the connections the server
  // keeps in reserve.
  virtual void set_authenticated() {}
  // The server is short of connections and this request holds one kept in
  // reserve: unless it proves a credential or asks for /health, it is to be
  // answered 503 (the connection then closes).
  virtual bool on_reserve() const { return false; }
};

// The whole body, or false in `fits` when it is larger than `limit`.
Task<std::string> read_body(Exchange& exchange, size_t limit, bool* fits);

}  // namespace abx::daemon::http
