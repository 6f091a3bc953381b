// The daemon's request path up to a route's handler: Boost.Beast's parser set
// up as http_server.cc sets it (64 KiB header limit, no body limit, a
// buffer_body read piece by piece), then the daemon's own code on what it
// parsed: target splitting and percent-decoding (url.cc), query parsing, the
// plane a request is for (plane.cc), route matching on every plane
// (route_table.cc), the Basic-auth user (envd_auth.cc), signed-URL checks and
// the query parsers of /files and /sandboxes.
//
// The framing itself (limits, feeding the parser, what is refused) is
// http_framing.cc's, as the server runs it; only the socket reads differ:
// here the whole input is buffered from the start.
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
#include "daemon/http_framing.h"
#include "daemon/http_request.h"
#include "daemon/plane.h"
#include "daemon/route_table.h"
#include "daemon/url.h"

namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;
using abx::daemon::http::Parser;
using namespace abx::daemon;

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

// An answer the server could send: one of the statuses it uses, a message.
void check(const http::Refusal& refusal) {
  if (refusal.status != 0 && refusal.status != 400 && refusal.status != 414 &&
      refusal.status != 431 && refusal.status != 505)
    __builtin_trap();
  if (refusal.message.empty() || http::error_body(refusal).empty()) __builtin_trap();
}

// Reads the body as BeastExchange::read_body_some does, with everything the
// connection will ever send already buffered: false when it stops there.
bool read_body(Parser& parser, beast::flat_buffer& buffer) {
  char piece[4096];
  while (!parser.is_done()) {
    parser.get().body().data = piece;
    parser.get().body().size = sizeof piece;
    beast::error_code ec = http::put_body(parser, buffer);
    if (ec == bhttp::error::need_more && http::body_read_room(buffer) == 0)
      ec = bhttp::error::header_limit;
    if (ec == bhttp::error::need_more) ec = bhttp::error::partial_message;  // no more input
    if (ec) {
      check(http::body_refusal(ec));
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  beast::flat_buffer buffer;
  auto in = buffer.prepare(size);
  std::memcpy(in.data(), data, size);
  buffer.commit(size);
  // Several requests on one keep-alive connection, as serve_requests loops.
  for (int requests = 0; requests < 8 && buffer.size() > 0; ++requests) {
    Parser parser;
    http::set_limits(parser);
    size_t parsed = 0;
    beast::error_code ec = http::put_header(parser, buffer, &parsed);
    if (ec == bhttp::error::need_more) ec = bhttp::error::partial_message;  // no more input
    if (ec) {
      if (auto refusal = http::refusal_for_header_error(ec, buffer, parsed)) check(*refusal);
      return 0;
    }
    if (auto refusal = http::framing_refusal(parser)) {
      check(*refusal);
      return 0;
    }
    route(http::to_request(parser.get()));
    if (!read_body(parser, buffer) || !parser.keep_alive()) return 0;
  }
  return 0;
}
