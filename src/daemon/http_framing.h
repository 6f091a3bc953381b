// How the HTTP server frames requests: the limits, feeding Beast's parser
// from the connection's buffer (the header and each chunk header or trailer
// bounded as a whole), and what to answer for input it refuses. Plain
// functions apart from http_server.cc's socket coroutines, so the HTTP fuzz
// target runs this very code.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace abx::daemon::http {

using Parser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;

inline constexpr size_t kReadChunk = 64 * 1024;
// The request header; also a chunk header (with its extensions) and the
// trailer, which are read whole before they are parsed.
inline constexpr size_t kHeaderLimit = 64 * 1024;
// What a connection buffers at most: a header (or chunk header, or trailer)
// that is not complete yet, and the read that would complete it.
inline constexpr size_t kBufferLimit = kHeaderLimit + kReadChunk;

// A request the server answers itself, then closes the connection. Status 0:
// the client went away, there is no one to answer.
struct Refusal {
  int status;
  std::string message;
};

// The one-line JSON error body every route sends: {"code":N,"message":"..."}.
std::string error_body(const Refusal& refusal);

bool client_went_away(const boost::beast::error_code& ec);

// A parser set up for one request: the header limit, no body limit (uploads
// stream to disk).
void set_limits(Parser& parser);

// Feeds the buffered bytes to the parser until the header is done: need_more
// when it needs bytes not read yet, header_limit once `*parsed` and what is
// buffered reach kHeaderLimit. Not Beast's async_read_header: Beast 1.74
// applies header_limit to each parse call rather than to the whole header,
// so a header sent in pieces could grow without bound.
boost::beast::error_code put_header(Parser& parser, boost::beast::flat_buffer& buffer,
                                    size_t* parsed);

// Feeds the buffered bytes to the parser, which puts body bytes into the
// body's buffer: success when that buffer is full or the body done,
// need_more when it needs bytes not read yet. A chunk header or trailer
// Beast cannot hold is header_limit.
boost::beast::error_code put_body(Parser& parser, boost::beast::flat_buffer& buffer);

// How much more the connection may read for the parser: a chunk header or
// trailer (the only things buffered whole while reading a body) may not
// exceed kHeaderLimit; 0 means it did.
size_t body_read_room(const boost::beast::flat_buffer& buffer);

// What to answer when the header could not be read (`parsed` bytes of it
// were consumed); nothing when the client went away.
std::optional<Refusal> refusal_for_header_error(const boost::beast::error_code& ec,
                                                const boost::beast::flat_buffer& buffer,
                                                size_t parsed);

// Framing Beast accepts but a request must not have: Content-Length given
// twice (even when equal), or a Transfer-Encoding whose last coding is not
// chunked (the body's length would be unknown).
std::optional<Refusal> framing_refusal(const Parser& parser);

// Why a request body could not be read.
Refusal body_refusal(const boost::beast::error_code& ec);

}  // namespace abx::daemon::http
