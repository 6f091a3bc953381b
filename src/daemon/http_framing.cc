#include "daemon/http_framing.h"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace abx::daemon::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

// The first line of what was read so far (the request line), if it ended.
std::optional<std::string_view> request_line(const beast::flat_buffer& buffer) {
  const std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
  const size_t end = data.find("\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return data.substr(0, end);
}

// A well-formed "HTTP/x.y" at the end of the request line: the version is
// one this server does not speak rather than garbage.
bool names_other_version(std::string_view line) {
  if (line.size() < 8) return false;
  const std::string_view version = line.substr(line.size() - 8);
  return version.starts_with("HTTP/") && std::isdigit(static_cast<unsigned char>(version[5])) &&
         version[6] == '.' && std::isdigit(static_cast<unsigned char>(version[7]));
}

}  // namespace

std::string error_body(const Refusal& refusal) {
  return nlohmann::json{{"code", refusal.status}, {"message", refusal.message}}.dump();
}

bool client_went_away(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
         ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == net::error::operation_aborted;
}

void set_limits(Parser& parser) {
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(kHeaderLimit);
}

beast::error_code put_header(Parser& parser, beast::flat_buffer& buffer, size_t* parsed) {
  beast::error_code ec;
  if (buffer.size() > 0) {
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    *parsed += used;
    // Beast's own limit bounds one put: a header that arrived in two reads
    // can end past kHeaderLimit without it noticing.
    if (*parsed > kHeaderLimit) return bhttp::error::header_limit;
    if (ec != bhttp::error::need_more && (ec || parser.is_header_done())) return ec;
  }
  if (*parsed + buffer.size() >= kHeaderLimit) return bhttp::error::header_limit;
  return bhttp::error::need_more;
}

beast::error_code put_body(Parser& parser, beast::flat_buffer& buffer) {
  if (buffer.size() == 0) return bhttp::error::need_more;
  beast::error_code ec;
  size_t used = 0;
  try {
    used = parser.put(buffer.data(), ec);
  } catch (const std::length_error&) {
    // Beast's fields take a name or value of at most 64 KiB less 2;
    // kHeaderLimit keeps a trailer below that, this is the backstop.
    return bhttp::error::header_limit;
  }
  buffer.consume(used);
  if (ec == bhttp::error::need_buffer) return {};  // the body's buffer is full
  if (!ec && used == 0 && !parser.is_done()) return bhttp::error::need_more;
  return ec;
}

size_t body_read_room(const beast::flat_buffer& buffer) {
  if (buffer.size() >= kHeaderLimit) return 0;
  return std::min(kReadChunk, kHeaderLimit - buffer.size());
}

std::optional<Refusal> refusal_for_header_error(const beast::error_code& ec,
                                                const beast::flat_buffer& buffer, size_t parsed) {
  if (client_went_away(ec)) return std::nullopt;
  if (ec == bhttp::error::header_limit) {
    // The parser consumes nothing until the request line is complete.
    if (parsed == 0 && !request_line(buffer)) return Refusal{414, "request target too long"};
    return Refusal{431, "request header fields too large (limit 64 KiB)"};
  }
  if (ec == bhttp::error::bad_version) {
    const auto line = request_line(buffer);
    if (line && names_other_version(*line)) {
      return Refusal{505, "HTTP version not supported (HTTP/1.0 and HTTP/1.1 are)"};
    }
  }
  return Refusal{400, "malformed request: " + ec.message()};
}

std::optional<Refusal> framing_refusal(const Parser& parser) {
  const auto& message = parser.get();
  const auto lengths = message.count(bhttp::field::content_length);
  if (lengths > 1 ||
      (lengths == 1 && message[bhttp::field::content_length].find(',') != std::string::npos)) {
    return Refusal{400, "malformed request: Content-Length given more than once"};
  }
  if (message.count(bhttp::field::transfer_encoding) > 0 && !parser.chunked()) {
    return Refusal{400, "malformed request: Transfer-Encoding must end with chunked"};
  }
  return std::nullopt;
}

Refusal body_refusal(const beast::error_code& ec) {
  if (ec == bhttp::error::header_limit) {
    return Refusal{431, "a chunk header or the trailer of the request body is over " +
                            std::to_string(kHeaderLimit >> 10) + " KiB"};
  }
  if (client_went_away(ec)) return Refusal{0, "read body: " + ec.message()};
  return Refusal{400, "malformed request body: " + ec.message()};
}

}  // namespace abx::daemon::http
