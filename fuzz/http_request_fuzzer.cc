// The daemon's request path up to a route's handler: Boost.Beast's parser set
// up as http_server.cc sets it (64 KiB header limit, no body limit, a
// buffer_body read piece by piece), then the daemon's own code on what it
// parsed: target splitting and percent-decoding (url.cc), query parsing, the
// plane a request is for (plane.cc), route matching on every plane
// (route_table.cc), the Basic-auth user (envd_auth.cc), signed-URL checks and
// the query parsers of /files and /sandboxes.
//
// http_server.cc keeps its connection loop and framing checks private (they
// are coroutines on a socket); the limits below mirror its constants.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "daemon/control_requests.h"
#include "daemon/envd_auth.h"
#include "daemon/envd_requests.h"
#include "daemon/http_exchange.h"
#include "daemon/http_request.h"
#include "daemon/plane.h"
#include "daemon/route_table.h"
#include "daemon/url.h"

namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;
using Parser = bhttp::request_parser<bhttp::buffer_body>;
using namespace abx::daemon;

constexpr size_t kHeaderLimit = 64 * 1024;  // http_server.cc's kHeaderLimit

// Everything the router and the routes' first lines do with a request
// before a handler touches a sandbox.
void route(const http::Request& req) {
  for (Plane plane : {Plane::control, Plane::envd, Plane::interpreter, Plane::proxy}) {
    const RouteMatch match = match_route(plane, req.method, req.path);
    if (match.route && match.route->pattern.find("{context}") != std::string_view::npos) {
      (void)parse_context_id(match.params);
    }
  }
  (void)sandbox_target(req);
  std::string error;
  (void)envd_auth::user_from_authorization(req.header("authorization"), envd_auth::standard_user(),
                                           &error);
  (void)envd_auth::signed_url_refusal(req.query, req.method, "token", 1700000000);
  (void)parse_files_query(req.query, true);
  (void)parse_files_query(req.query, false);
  (void)parse_list_query(req.query);
}

// Reads the body as BeastExchange::read_body_some does: into a fixed buffer.
void read_body(Parser& parser, beast::flat_buffer& buffer) {
  char piece[4096];
  while (!parser.is_done() && buffer.size() > 0) {
    parser.get().body().data = piece;
    parser.get().body().size = sizeof piece;
    beast::error_code ec;
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec || used == 0) return;
  }
}

}  // namespace

// http_server.cc defines this, but that file's coroutines do not build with
// clang 14 under these sanitizers ("Cannot represent a difference across
// sections"), so the target carries the same three lines.

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  beast::flat_buffer buffer;
  auto in = buffer.prepare(size);
  std::memcpy(in.data(), data, size);
  buffer.commit(size);
  // Several requests on one keep-alive connection, as serve_connection loops.
  for (int requests = 0; requests < 8 && buffer.size() > 0; ++requests) {
    Parser parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    parser.header_limit(kHeaderLimit);
    size_t parsed = 0;
    beast::error_code ec;
    while (buffer.size() > 0 && !parser.is_header_done()) {
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      parsed += used;
      if (ec && ec != bhttp::error::need_more) return 0;
      if (used == 0) break;
    }
    if (!parser.is_header_done() || parsed >= kHeaderLimit) return 0;
    route(http::to_request(parser.get()));
    read_body(parser, buffer);
    if (!parser.is_done() || !parser.keep_alive()) return 0;
  }
  return 0;
}
