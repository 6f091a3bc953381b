// The pieces of HTTP/1.1 parsing both directions of an intercepted stream
// share: a message head split into fields, a body passed by Content-Length or
// chunked framing, and what the request and response filters tell each other.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace abx::egress {

inline constexpr size_t kMaxHead = 64 * 1024;

// One direction of a relayed stream, rewritten on its way.
class HttpFilter {
 public:
  virtual ~HttpFilter() = default;
  // Consumes bytes, appends what goes on to `out`. False: the stream must
  // end; `error_response()` is what the client gets.
  virtual bool feed(std::string_view in, std::string& out) = 0;
  virtual const std::string& error_response() const = 0;
  // How many bytes the next feed may take.
  virtual size_t read_limit() const = 0;
};

// What a response needs to know of its request: its framing depends on the
// method (RFC 9112 6.3), and headers echoing a secret sent are stripped.
enum class RequestKind { kOther, kHead, kConnect };
struct ExchangeLog {
  std::deque<RequestKind> requests;  // sent, not yet answered, oldest first
  std::vector<std::string> secrets;  // values the proxy put into requests
};

// A head: its first line and its fields, names and trimmed values as sent.
struct Head {
  std::string_view first_line;
  std::vector<std::pair<std::string_view, std::string_view>> fields;
};
// `head` ends with an empty line; nullopt: a field is malformed (obs-fold too).
std::optional<Head> parse_head(std::string_view head);

// Passes one message body through unchanged, by its length or its chunks;
// a trailer field for which `drop_trailer` says true is left out.
class BodyPass {
 public:
  using LineTest = std::function<bool(std::string_view field_line)>;
  explicit BodyPass(LineTest drop_trailer = nullptr) : drop_trailer_(std::move(drop_trailer)) {}
  void expect_length(uint64_t length);
  void expect_chunked();
  bool active() const { return state_ != State::kNone; }
  // Moves body bytes from the front of `in` to `out` until the body ends or
  // `in` is used up; false: malformed chunk framing.
  bool feed(std::string_view& in, std::string& out);
  // Data bytes that may pass now without reading into what follows.
  uint64_t data_left() const;

 private:
  enum class State { kNone, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailer };
  bool take_line(std::string_view& in);
  LineTest drop_trailer_;
  State state_ = State::kNone;
  uint64_t remaining_ = 0;
  std::string line_;  // an incomplete chunk-size, chunk end or trailer line
};

// Whether a Transfer-Encoding value ends in chunked (then it frames the body).
bool ends_with_chunked(std::string_view value);
// A Content-Length value; nullopt if not only digits.
std::optional<uint64_t> content_length_of(std::string_view value);
// Whether `value` may be sent as a header value (no CR, LF or NUL).
bool is_header_value(std::string_view value);
// Whether `name` is an HTTP token.
bool is_header_name(std::string_view name);

}  // namespace abx::egress
