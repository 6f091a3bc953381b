#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <string>

#include "daemon/http_framing.h"

namespace abx::daemon::http {
namespace {

namespace bhttp = boost::beast::http;

// What the connection's reads would have put into the buffer, piece by piece;
// returns put_header's answer after the last piece.
boost::beast::error_code feed_header_in_reads(const std::string& request, size_t first_read) {
  Parser parser;
  set_limits(parser);
  boost::beast::flat_buffer buffer(kBufferLimit);
  size_t parsed = 0;
  boost::beast::error_code ec;
  for (size_t at = 0; at < request.size();) {
    const size_t piece = std::min(at == 0 ? first_read : kReadChunk, request.size() - at);
    const auto room = buffer.prepare(piece);
    boost::asio::buffer_copy(room, boost::asio::buffer(request.data() + at, piece));
    buffer.commit(piece);
    at += piece;
    ec = put_header(parser, buffer, &parsed);
    if (ec != bhttp::error::need_more) return ec;
  }
  return ec;
}

std::string request_with_filler_headers(size_t fillers) {
  std::string request = "GET /health HTTP/1.1\r\nHost: h\r\n";
  for (size_t i = 0; i < fillers; ++i) {
    request += "X-Filler-" + std::to_string(i) + ": " + std::string(1000, 'b') + "\r\n";
  }
  return request + "\r\n";
}

TEST(HttpFraming, AHeaderOverTheLimitInTwoReadsIsRefused) {
  // The first read ends mid-header; the second holds the rest, less than one
  // parse call's limit but past the limit for the whole header.
  EXPECT_EQ(feed_header_in_reads(request_with_filler_headers(100), 40'000),
            bhttp::error::header_limit);
}

TEST(HttpFraming, AHeaderOverTheLimitInOneReadIsRefused) {
  EXPECT_EQ(feed_header_in_reads(request_with_filler_headers(100), kReadChunk),
            bhttp::error::header_limit);
}

TEST(HttpFraming, AHeaderUnderTheLimitInTwoReadsIsParsed) {
  EXPECT_FALSE(feed_header_in_reads(request_with_filler_headers(60), 30'000));
}

// Beast holds a trailer whole in the buffer, so body_read_room bounds it.
TEST(HttpFraming, ATrailerThatNeverEndsIsRefused) {
  Parser parser;
  set_limits(parser);
  boost::beast::flat_buffer buffer(kBufferLimit);
  size_t parsed = 0;
  const std::string head =
      "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n";
  auto append = [&](const std::string& bytes) {
    boost::asio::buffer_copy(buffer.prepare(bytes.size()), boost::asio::buffer(bytes));
    buffer.commit(bytes.size());
  };
  append(head);
  ASSERT_EQ(put_header(parser, buffer, &parsed), boost::beast::error_code{});
  std::string body(16, '\0');
  boost::beast::error_code ec;
  size_t sent = 0;
  for (int i = 0; i < 100 && sent < 10 * kHeaderLimit; ++i) {
    parser.get().body().data = body.data();
    parser.get().body().size = body.size();
    ec = put_body(parser, buffer);
    if (ec && ec != bhttp::error::need_more) break;
    if (body_read_room(buffer) == 0) {
      ec = bhttp::error::header_limit;
      break;
    }
    // As read_more would: at most the room left, ending mid-line.
    std::string lines;
    while (lines.size() < body_read_room(buffer)) {
      lines += "X-T-" + std::to_string(sent++) + ": " + std::string(1000, 't') + "\r\n";
    }
    lines.resize(body_read_room(buffer));
    sent += lines.size();
    append(lines);
  }
  EXPECT_EQ(ec, bhttp::error::header_limit) << "trailer bytes sent: " << sent;
}

}  // namespace
}  // namespace abx::daemon::http
