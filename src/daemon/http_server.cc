#include "daemon/http_server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "common/unique_fd.h"
#include "daemon/connection_table.h"
#include "daemon/http_framing.h"
#include "daemon/http_request.h"
#include "daemon/tcp_progress.h"

namespace abx::daemon::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;

constexpr size_t kDrainLimit = 1 << 20;
// After a refusal: how long and how much of what the client still sends is
// read and dropped, so that closing does not reset the connection before the
// client has read the answer.
constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr size_t kLingerLimit = 1 << 20;

// Connections held at once when --max-connections is not given: this many,
// or half the open-files limit when that is lower (sandboxes, files and
// proxied connections need descriptors too).
constexpr size_t kDefaultMaxConnections = 4096;
// Connections over the limit that may still ask for GET /health (each gets a
// 503 for anything else).
constexpr size_t kHealthOnlyConnections = 32;
// One client address may hold this share of the connections by default.
constexpr size_t kPerAddressShare = 4;
// This share of the connections is kept for requests with a credential (and
// /health): requests without one hold the rest at most.
constexpr size_t kReserveShare = 8;
constexpr auto kHealthOnlyHeaderTimeout = std::chrono::seconds(5);
// Accept failures (out of descriptors) are retried after this, doubling up to the maximum.
constexpr auto kAcceptBackoffFirst = std::chrono::milliseconds(100);
constexpr auto kAcceptBackoffMax = std::chrono::milliseconds(1600);
constexpr auto kAcceptAfterEviction = std::chrono::milliseconds(10);

struct Timeouts {
  // Streams may be silent for minutes (keepalive events cover them); an idle
  // keep-alive connection between requests is closed after this long, as envd
  // does, or earlier when the daemon is at its connection limit.
  std::chrono::seconds idle{640};
  // From a request's first byte to the end of its header; for a new
  // connection, from its accept (--header-timeout).
  std::chrono::seconds header{10};
  // Without a byte while a request body is read.
  std::chrono::seconds body{60};
  // Without the client acknowledging a byte of a response being written: a
  // client that stops reading a download loses the connection instead of
  // holding its descriptor and buffers for ever.
  std::chrono::seconds send{60};
};

std::chrono::seconds seconds_from_env(const char* name, std::chrono::seconds fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value <= 0) return fallback;
  return std::chrono::seconds(value);
}

// Tests shorten the timeouts to check the 408s and the closes quickly.
Timeouts timeouts_from_env(std::chrono::seconds header) {
  Timeouts timeouts;
  timeouts.header = header;
  timeouts.body = seconds_from_env("ABX_HTTP_BODY_TIMEOUT_S", timeouts.body);
  timeouts.send = seconds_from_env("ABX_HTTP_SEND_TIMEOUT_S", timeouts.send);
  return timeouts;
}

// Thrown by read_body_some when the body cannot be read: handle_one answers
// it with `status` (a framing error is the client's, not a 500), or just
// closes when status is 0 (the client went away).
class BodyError : public std::runtime_error {
 public:
  BodyError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// Cancels the reads or writes on `stream` once `after` has passed. Unlike
// tcp_stream's own timeout it leaves the socket open, so a 408 can still be
// sent after a late read. A send deadline starts again each time the client
// has acknowledged more of what was sent (a slow reader is still reading);
// when it passes, the close becomes a reset (SO_LINGER 0): the kernel drops
// what the client never read instead of holding it for a peer that does not.
class Deadline {
 public:
  enum class Kind { read, send };

  Deadline(beast::tcp_stream& stream, std::chrono::steady_clock::duration after,
           Kind kind = Kind::read)
      : state_(std::make_shared<State>()),
        timer_(stream.get_executor()),
        socket_(stream.socket()),
        after_(after),
        kind_(kind) {
    if (kind_ == Kind::send) acked_ = tcp_bytes_acked(socket_.native_handle());
    arm();
  }
  ~Deadline() { state_->armed = false; }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  bool expired() const { return state_->expired; }

 private:
  struct State {
    bool armed = true;
    bool expired = false;
  };

  void arm() {
    timer_.expires_after(after_);
    // The timer runs on the connection's strand; `armed` is false once this
    // object (and so possibly the stream) is gone.
    timer_.async_wait([state = state_, this](const beast::error_code& ec) {
      if (ec || !state->armed) return;
      if (kind_ == Kind::send && client_acknowledged_more()) return arm();
      state->expired = true;
      beast::error_code ignored;
      if (kind_ == Kind::send) socket_.set_option(net::socket_base::linger(true, 0), ignored);
      socket_.cancel(ignored);
    });
  }

  bool client_acknowledged_more() {
    const auto acked = tcp_bytes_acked(socket_.native_handle());
    const bool more = acked && acked_ && *acked > *acked_;
    acked_ = acked;
    return more;
  }

  std::shared_ptr<State> state_;
  net::steady_timer timer_;
  tcp::socket& socket_;
  std::chrono::steady_clock::duration after_;
  Kind kind_;
  std::optional<uint64_t> acked_;
};

// Answers a request the server will not serve, then reads and drops what the
// client still sends for a moment: closing with unread data would reset the
// connection and the client could lose the answer.
Task<void> refuse_and_close(beast::tcp_stream& stream, const Refusal& refusal) {
  spdlog::debug("http: refused with {}: {}", refusal.status, refusal.message);
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(refusal.status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.keep_alive(false);
  res.body() = error_body(refusal);
  res.prepare_payload();
  beast::error_code ec;
  stream.expires_after(kLingerTimeout);
  co_await bhttp::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  std::string sink(kReadChunk, '\0');
  for (size_t dropped = 0; !ec && dropped < kLingerLimit;) {
    dropped += co_await stream.async_read_some(net::buffer(sink),
                                               net::redirect_error(net::use_awaitable, ec));
  }
}

// Why a request body could not be read, as handle_one answers it.
BodyError body_error(const beast::error_code& ec) {
  const Refusal refusal = body_refusal(ec);
  return BodyError(refusal.status, refusal.message);
}

class BeastExchange final : public Exchange {
 public:
  BeastExchange(beast::tcp_stream& stream, beast::flat_buffer& buffer, Parser& parser,
                const Timeouts& timeouts, ConnectionTable::Slot& slot, bool on_reserve)
      : stream_(stream),
        buffer_(buffer),
        parser_(parser),
        timeouts_(timeouts),
        slot_(slot),
        on_reserve_(on_reserve),
        request_(to_request(parser.get())) {
    keep_alive_ = parser.get().keep_alive();
  }

  const Request& request() const override { return request_; }
  bool responded() const { return responded_; }

  void set_authenticated() override {
    authenticated_ = true;
    slot_.set_authenticated();
  }
  bool on_reserve() const override { return on_reserve_; }
  // Held a reserved connection without a credential: it was answered 503
  // (or /health) and gives the connection back.
  bool must_close_after() const { return on_reserve_ && !authenticated_; }
  bool keep_alive() const { return keep_alive_; }

  // Up to kReadChunk of the body, all of which must come within the body
  // timeout. The parser is fed by hand, as for the header: Beast's
  // async_read bounds neither a chunk header nor the trailer (its buffer
  // grows while the client sends), and for a trailer field over 64 KiB it
  // throws std::length_error from inside the read, out of the I/O loop,
  // past every coroutine's try (the client got no answer).
  Task<std::string> read_body_some() override {
    co_await send_continue_once();
    std::string chunk(kReadChunk, '\0');
    auto& body = parser_.get().body();
    body.data = chunk.data();
    body.size = chunk.size();
    const Deadline deadline(stream_, timeouts_.body);
    while (!parser_.is_done() && body.size > 0) {
      beast::error_code ec = put_body(parser_, buffer_);
      if (ec == bhttp::error::need_more) ec = co_await read_more();
      if (deadline.expired()) {
        throw BodyError(
            408, "no request body data for " + std::to_string(timeouts_.body.count()) + " s");
      }
      if (ec) throw body_error(ec);
    }
    chunk.resize(chunk.size() - body.size);
    co_return chunk;
  }

  // Answers with a JSON error; the connection ends after it.
  Task<void> refuse(const Refusal& refusal) {
    keep_alive_ = false;
    responded_ = true;
    co_await refuse_and_close(stream_, refusal);
  }

  Task<void> respond(int status, std::string content_type, std::string body,
                     Headers extra) override {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), 11};
    if (!content_type.empty()) res.set(bhttp::field::content_type, content_type);
    for (auto& [name, value] : extra) res.set(name, value);
    res.keep_alive(keep_alive_);
    res.body() = std::move(body);
    res.prepare_payload();
    responded_ = true;
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    co_await bhttp::async_write(stream_, res, net::redirect_error(net::use_awaitable, ec));
    check_sent(ec, deadline);
  }

  Task<void> start_stream(int status, std::string content_type, Headers extra,
                          std::optional<uint64_t> length) override {
    bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, content_type);
    for (auto& [name, value] : extra) res.set(name, value);
    res.keep_alive(keep_alive_);
    sized_left_ = length;
    if (length) {
      res.content_length(*length);
    } else {
      res.chunked(true);
    }
    bhttp::response_serializer<bhttp::empty_body> serializer{res};
    responded_ = true;
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    co_await bhttp::async_write_header(stream_, serializer,
                                       net::redirect_error(net::use_awaitable, ec));
    check_sent(ec, deadline);
  }

  Task<bool> write_chunk(std::string data) override {
    if (sized_left_) {
      data.resize(static_cast<size_t>(std::min<uint64_t>(data.size(), *sized_left_)));
      *sized_left_ -= data.size();
    }
    if (data.empty()) co_return true;  // an empty chunk would end the body
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    if (sized_left_) {
      co_await net::async_write(stream_, net::buffer(data),
                                net::redirect_error(net::use_awaitable, ec));
    } else {
      co_await net::async_write(stream_, bhttp::make_chunk(net::buffer(data)),
                                net::redirect_error(net::use_awaitable, ec));
    }
    if (deadline.expired()) spdlog::debug("http: {}", not_reading_message());
    if (ec) keep_alive_ = false;
    co_return !ec;
  }

  Task<void> finish_stream() override {
    if (sized_left_) {
      if (*sized_left_ > 0) keep_alive_ = false;  // the body ended short of its length
      co_return;
    }
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    co_await net::async_write(stream_, bhttp::make_chunk_last(),
                              net::redirect_error(net::use_awaitable, ec));
    check_sent(ec, deadline);
  }

  Task<void> switch_protocols(Headers extra) override {
    bhttp::response<bhttp::empty_body> res{bhttp::status::switching_protocols, 11};
    for (auto& [name, value] : extra) res.set(name, value);
    responded_ = true;
    keep_alive_ = false;  // the connection belongs to the new protocol now
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    co_await bhttp::async_write(stream_, res, net::redirect_error(net::use_awaitable, ec));
    check_sent(ec, deadline);
    stream_.expires_never();
    watch_for_dead_peer(stream_.socket().native_handle());
  }

  // What the client sent after the request's header comes first: it may not
  // have waited for the 101.
  Task<std::string> read_raw_some() override {
    std::string out;
    if (buffer_.size() > 0) {
      out = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      co_return out;
    }
    out.resize(kReadChunk);
    beast::error_code ec;
    const size_t got = co_await stream_.async_read_some(
        net::buffer(out), net::redirect_error(net::use_awaitable, ec));
    out.resize(ec ? 0 : got);
    co_return out;
  }

  Task<bool> write_raw(std::string data) override {
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    co_await net::async_write(stream_, net::buffer(data),
                              net::redirect_error(net::use_awaitable, ec));
    if (deadline.expired()) spdlog::debug("http: {}", not_reading_message());
    co_return !ec;
  }

  void close_raw() override {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().cancel(ignored);
  }

  // Reads and drops what the handler left of the body so the connection can
  // serve the next request; gives up (and closes) on a large remainder.
  Task<bool> drain_body() {
    if (parser_.is_done()) co_return true;
    if (!continue_sent_ && expects_continue()) co_return false;  // client never sent it
    size_t dropped = 0;
    while (dropped < kDrainLimit) {
      const std::string piece = co_await read_body_some();
      if (piece.empty()) co_return true;
      dropped += piece.size();
    }
    co_return false;
  }

 private:
  bool expects_continue() const { return lower(request_.header("expect")) == "100-continue"; }

  Task<void> send_continue_once() {
    if (continue_sent_ || !expects_continue()) co_return;
    continue_sent_ = true;
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    beast::error_code ec;
    const Deadline deadline = send_deadline();
    co_await net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                              net::redirect_error(net::use_awaitable, ec));
    check_sent(ec, deadline);
  }

  // Reads what the parser needs next, refusing a chunk header or trailer
  // (the only things buffered whole) larger than kHeaderLimit.
  Task<beast::error_code> read_more() {
    const size_t room = body_read_room(buffer_);
    if (room == 0) co_return bhttp::error::header_limit;
    beast::error_code ec;
    const size_t got = co_await stream_.async_read_some(
        buffer_.prepare(room), net::redirect_error(net::use_awaitable, ec));
    buffer_.commit(got);
    if (ec == net::error::eof) co_return bhttp::error::partial_message;
    co_return ec;
  }

  Deadline send_deadline() { return Deadline(stream_, timeouts_.send, Deadline::Kind::send); }

  std::string not_reading_message() const {
    return "the client took none of the response for " + std::to_string(timeouts_.send.count()) +
           " s; closing";
  }

  // Throws when a write failed: the response cannot go on.
  void check_sent(const beast::error_code& ec, const Deadline& deadline) {
    if (!ec) return;
    keep_alive_ = false;
    if (deadline.expired()) throw std::runtime_error(not_reading_message());
    throw std::system_error(ec);
  }

  beast::tcp_stream& stream_;
  beast::flat_buffer& buffer_;
  Parser& parser_;
  Timeouts timeouts_;
  ConnectionTable::Slot& slot_;
  const bool on_reserve_;
  bool authenticated_ = false;
  Request request_;
  bool keep_alive_ = true;
  bool responded_ = false;
  std::optional<uint64_t> sized_left_;  // bytes a sized stream still owes
  bool continue_sent_ = false;
};

// Runs the handler; turns an escaped exception into a 500 (a body that could
// not be read into its 4xx) when nothing was sent yet.
Task<bool> handle_one(BeastExchange& exchange, const Handler& handler) {
  std::string failure;
  std::optional<Refusal> refusal;
  try {
    co_await handler(exchange);
  } catch (const BodyError& e) {
    failure = e.what();
    refusal = Refusal{e.status(), e.what()};
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty() && exchange.responded()) co_return exchange.keep_alive();
  if (exchange.responded()) {
    spdlog::debug("http: {} {} ended early: {}", exchange.request().method,
                  exchange.request().target, failure);
    co_return false;
  }
  if (refusal && refusal->status == 0) co_return false;  // the client went away
  if (refusal) {
    spdlog::debug("http: {} {}: {}", exchange.request().method, exchange.request().target, failure);
    co_await exchange.refuse(*refusal);
    co_return false;
  }
  if (failure.empty()) failure = "the handler sent no response";
  spdlog::error("http: {} {}: {}", exchange.request().method, exchange.request().target, failure);
  co_await exchange.respond(500, "application/json", R"({"code":500,"message":"internal error"})",
                            {});
  co_return exchange.keep_alive();
}

// What the table needs to close a connection that reads its head or waits
// between requests: the close runs on the connection's strand, and only while
// it waits for bytes.
struct Evictable {
  tcp::socket* socket = nullptr;  // null once the connection ended
  bool waiting = false;
};

std::function<void()> closer(const net::any_io_executor& strand,
                             std::shared_ptr<Evictable> evictable) {
  return [strand, evictable = std::move(evictable)] {
    net::post(strand, [evictable] {
      if (!evictable->waiting || !evictable->socket) return;
      beast::error_code ignored;
      evictable->socket->cancel(ignored);
    });
  };
}

// Waits for the first bytes of the next request (or takes a pipelined one):
// a keep-alive connection may stay quiet for a long time between requests,
// unless the table closes it to make room. A `fresh` connection is reading
// its head from the start. False when the connection should close.
Task<bool> wait_for_request(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                            std::chrono::seconds timeout, ConnectionTable::Slot& slot,
                            const std::shared_ptr<Evictable>& evictable, bool fresh) {
  const auto close = closer(stream.get_executor(), evictable);
  if (buffer.size() > 0) {
    slot.set_reading_head(close);
    co_return !slot.evicted();
  }
  if (fresh) {
    slot.set_reading_head(close);
  } else {
    slot.set_idle(close);
  }
  evictable->waiting = true;
  stream.expires_after(timeout);
  beast::error_code ec;
  const size_t got = co_await stream.async_read_some(buffer.prepare(kReadChunk),
                                                     net::redirect_error(net::use_awaitable, ec));
  evictable->waiting = false;
  buffer.commit(got);
  stream.expires_never();
  if (got == 0 || slot.evicted()) co_return false;
  // From its first byte a next request is a head being read: evicted before idle ones.
  if (!fresh) slot.set_reading_head(close);
  co_return true;
}

// Feeds the header to the parser as it arrives (see put_header); stops when
// the table gave the connection's place away.
Task<beast::error_code> parse_header(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                     Parser& parser, size_t* parsed, ConnectionTable::Slot& slot,
                                     Evictable& evictable) {
  for (;;) {
    beast::error_code ec = put_header(parser, buffer, parsed);
    if (ec != bhttp::error::need_more) co_return ec;
    if (slot.evicted()) co_return net::error::operation_aborted;
    ec = {};
    evictable.waiting = true;
    const size_t got = co_await stream.async_read_some(buffer.prepare(kReadChunk),
                                                       net::redirect_error(net::use_awaitable, ec));
    evictable.waiting = false;
    buffer.commit(got);
    if (ec == net::error::eof) co_return bhttp::error::partial_message;
    if (ec) co_return ec;
  }
}

// Reads one request's header within `budget`; a refusal when it is
// malformed, too large or late.
Task<std::optional<Refusal>> read_header(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                         Parser& parser, const Timeouts& timeouts,
                                         std::chrono::steady_clock::duration budget,
                                         ConnectionTable::Slot& slot, Evictable& evictable,
                                         bool* client_gone) {
  const Deadline deadline(stream, std::max<std::chrono::steady_clock::duration>(budget, {}));
  size_t parsed = 0;
  const beast::error_code ec =
      co_await parse_header(stream, buffer, parser, &parsed, slot, evictable);
  if (slot.evicted()) {
    *client_gone = true;  // its place is another connection's: close without an answer
    co_return std::nullopt;
  }
  if (deadline.expired()) {
    co_return Refusal{408, "request header not received within " +
                               std::to_string(timeouts.header.count()) + " s"};
  }
  if (ec) {
    spdlog::debug("http: read header: {}", ec.message());
    auto refusal = refusal_for_header_error(ec, buffer, parsed);
    *client_gone = !refusal;
    co_return refusal;
  }
  co_return framing_refusal(parser);
}

bool is_health_check(const Parser& parser) {
  const auto& message = parser.get();
  const std::string_view target(message.target().data(), message.target().size());
  return (message.method() == bhttp::verb::get || message.method() == bhttp::verb::head) &&
         (target == "/health" || target.starts_with("/health?"));
}

Refusal at_capacity_refusal() {
  return Refusal{503, "the daemon is at its connection limit; retry shortly"};
}

// Serves requests until the client or a timeout ends the connection. A
// health-only connection (over the limit) answers one GET /health.
Task<void> serve_requests(beast::tcp_stream& stream, const Handler& handler, Timeouts timeouts,
                          ConnectionTable::Slot& slot,
                          const std::shared_ptr<Evictable>& evictable) {
  const bool health_only = slot.kind() == ConnectionTable::Kind::health_only;
  if (health_only) timeouts.header = std::min(timeouts.header, kHealthOnlyHeaderTimeout);
  beast::flat_buffer buffer(kBufferLimit);
  for (bool fresh = true;; fresh = false) {
    // A new connection's head is due within the header timeout of its
    // accept; a keep-alive one's from the first byte of its next request.
    const auto started = std::chrono::steady_clock::now();
    const auto wait = fresh ? timeouts.header : timeouts.idle;
    if (!co_await wait_for_request(stream, buffer, wait, slot, evictable, fresh)) co_return;
    const auto budget =
        fresh ? timeouts.header - (std::chrono::steady_clock::now() - started) : timeouts.header;
    Parser parser;
    set_limits(parser);
    bool client_gone = false;
    if (auto refusal = co_await read_header(stream, buffer, parser, timeouts, budget, slot,
                                            *evictable, &client_gone)) {
      co_await refuse_and_close(stream, *refusal);
      co_return;
    }
    if (client_gone) co_return;
    const auto admission = slot.set_busy();
    if (admission == ConnectionTable::Admission::closed) co_return;
    if (health_only && !is_health_check(parser)) {
      co_await refuse_and_close(stream, at_capacity_refusal());
      co_return;
    }
    BeastExchange exchange(stream, buffer, parser, timeouts, slot,
                           admission == ConnectionTable::Admission::reserve_only);
    if (!co_await handle_one(exchange, handler)) co_return;
    if (health_only || exchange.must_close_after()) co_return;
    if (!co_await exchange.drain_body()) co_return;
  }
}

// The exception barrier of a connection: whatever a peer sends, whatever a
// handler throws, only this connection ends.
Task<void> serve_connection(tcp::socket socket, Handler handler, Timeouts timeouts,
                            std::unique_ptr<ConnectionTable::Slot> slot) {
  beast::tcp_stream stream(std::move(socket));
  auto evictable = std::make_shared<Evictable>();
  evictable->socket = &stream.socket();
  try {
    co_await serve_requests(stream, handler, timeouts, *slot, evictable);
  } catch (const std::system_error& e) {
    spdlog::debug("http: connection closed: {}", e.what());
  } catch (const std::exception& e) {
    spdlog::warn("http: connection closed after an error: {}", e.what());
  } catch (...) {
    spdlog::warn("http: connection closed after an unknown exception");
  }
  evictable->socket = nullptr;
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

// Asio opens and accepts sockets without close-on-exec; the daemon's helpers
// (mmdebstrap, newuidmap, a sandbox's init) must not inherit them.
void set_cloexec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

// At most one line a second for a condition that may repeat thousands of
// times a second (accept failing, connections over the limit); says how many
// were not logged.
class ThrottledWarning {
 public:
  explicit ThrottledWarning(std::string what) : what_(std::move(what)) {}

  void log(const std::string& detail) {
    const auto now = std::chrono::steady_clock::now();
    if (last_ && now - *last_ < std::chrono::seconds(1)) {
      ++suppressed_;
      return;
    }
    if (suppressed_ > 0) {
      spdlog::warn("http: {}: {} ({} more in the last second)", what_, detail, suppressed_);
    } else {
      spdlog::warn("http: {}: {}", what_, detail);
    }
    last_ = now;
    suppressed_ = 0;
  }

 private:
  std::string what_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  size_t suppressed_ = 0;
};

bool out_of_descriptors(const beast::error_code& ec) {
  return ec == net::error::no_descriptors || ec.value() == ENFILE ||
         ec == net::error::no_buffer_space || ec == net::error::no_memory;
}

// A descriptor held in reserve: given up when accept fails for want of one,
// so the daemon can still take one connection and answer /health on it.
UniqueFd open_spare_fd() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }

struct Listener {
  std::shared_ptr<tcp::acceptor> acceptor;
  Handler handler;
  Timeouts timeouts;
  std::shared_ptr<ConnectionTable> table;
};

void spawn_connection(tcp::socket socket, const Listener& listener,
                      std::unique_ptr<ConnectionTable::Slot> slot) {
  set_cloexec(socket.native_handle());
  beast::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // stream frames go out at once
  auto executor = socket.get_executor();
  net::co_spawn(
      executor,
      serve_connection(std::move(socket), listener.handler, listener.timeouts, std::move(slot)),
      [](const std::exception_ptr& failure) {
        if (failure) spdlog::error("http: a connection ended with an exception");
      });
}

// The client's address, as the per-address limit counts it (an IPv4 client
// on an IPv6 socket counts as its IPv4 address).
std::string source_of(const tcp::socket& socket) {
  beast::error_code ec;
  auto address = socket.remote_endpoint(ec).address();
  if (ec) return "?";
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6());
  }
  return address.to_string();
}

// Never spins: when accept fails for want of a descriptor it closes the
// connection reading its head longest (or idle longest) and tries again a
// moment later, so the next connection is served in full; only when none can
// be closed does it give up the spare descriptor (one more connection may ask
// for /health) and then wait a growing delay. It says so at most once a second.
Task<void> accept_loop(Listener listener) {
  auto& acceptor = *listener.acceptor;
  auto& ioc = static_cast<net::io_context&>(acceptor.get_executor().context());
  net::steady_timer backoff_timer(acceptor.get_executor());
  auto backoff = kAcceptBackoffFirst;
  ThrottledWarning accept_warning("accept");
  ThrottledWarning limit_warning("connection limit");
  UniqueFd spare = open_spare_fd();
  bool on_spare = false;
  for (;;) {
    if (!spare.valid() && !on_spare) spare = open_spare_fd();
    beast::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(
        net::make_strand(ioc), net::redirect_error(net::use_awaitable, ec));
    if (ec == net::error::operation_aborted) co_return;
    const bool evicted = ec && out_of_descriptors(ec) && listener.table->evict_one();
    if (ec && !evicted && out_of_descriptors(ec) && spare.valid()) {
      accept_warning.log(ec.message() + "; answering /health only meanwhile");
      spare.reset();
      on_spare = true;
      continue;
    }
    if (ec) {
      // The closed connection gives back its descriptor in a moment;
      // otherwise wait longer each time.
      const auto delay = evicted ? kAcceptAfterEviction : backoff;
      accept_warning.log(ec.message() + "; retrying in " + std::to_string(delay.count()) + " ms");
      backoff_timer.expires_after(delay);
      co_await backoff_timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      if (!evicted) backoff = std::min(backoff * 2, kAcceptBackoffMax);
      on_spare = false;
      continue;
    }
    backoff = kAcceptBackoffFirst;
    auto slot = listener.table->admit(source_of(socket), on_spare);
    on_spare = false;
    if (!slot) {
      limit_warning.log(std::to_string(listener.table->open()) +
                        " connections open; closing new ones at once");
      continue;  // the socket closes here
    }
    if (slot->kind() == ConnectionTable::Kind::regular &&
        listener.table->open() >= listener.table->limit()) {
      limit_warning.log(std::to_string(listener.table->open()) +
                        " connections open; each new one closes one reading its head longest "
                        "or idle longest");
    } else if (slot->kind() == ConnectionTable::Kind::health_only) {
      limit_warning.log(std::to_string(listener.table->open()) +
                        " connections open; new ones answer only GET /health");
    }
    spawn_connection(std::move(socket), listener, std::move(slot));
  }
}

// --max-connections, or the default capped at half the open-files limit.
size_t connection_limit(size_t requested) {
  rlimit limit{};
  const bool known = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  const size_t files = known ? static_cast<size_t>(limit.rlim_cur) : 0;
  if (requested > 0) {
    if (known && requested >= files) {
      spdlog::warn("http: --max-connections {} is not below the open-files limit {}", requested,
                   files);
    }
    return requested;
  }
  if (!known) return kDefaultMaxConnections;
  return std::max<size_t>(1, std::min(kDefaultMaxConnections, files / 2));
}

ConnectionLimits connection_limits(const ServerLimits& server) {
  ConnectionLimits limits;
  limits.connections = connection_limit(server.max_connections);
  limits.per_source = server.max_per_address > 0
                          ? std::min(server.max_per_address, limits.connections)
                          : std::max<size_t>(1, limits.connections / kPerAddressShare);
  limits.reserve = limits.connections / kReserveShare;
  limits.overflow = kHealthOnlyConnections;
  return limits;
}

}  // namespace

Task<std::string> read_body(Exchange& exchange, size_t limit, bool* fits) {
  std::string body;
  *fits = true;
  for (;;) {
    std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) co_return body;
    if (body.size() + piece.size() > limit) {
      *fits = false;
      co_return std::string{};
    }
    body += piece;
  }
}

Result<uint16_t> listen(net::io_context& ioc, const std::string& host_port, Handler handler,
                        const ServerLimits& server_limits) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return Error{"parse listen address", EINVAL, host_port + " (expected host:port)"};
  }
  beast::error_code ec;
  const auto address = net::ip::make_address(host_port.substr(0, colon), ec);
  int port = -1;
  try {
    port = std::stoi(host_port.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (ec || port < 0 || port > 65535) {
    return Error{"parse listen address", EINVAL, host_port + " (expected host:port)"};
  }
  auto acceptor = std::make_shared<tcp::acceptor>(ioc);
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) set_cloexec(acceptor->native_handle());
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{"listen on " + host_port, ec.value(), ec.message()};
  const uint16_t bound = acceptor->local_endpoint().port();
  const ConnectionLimits limits = connection_limits(server_limits);
  spdlog::info(
      "http: up to {} connections at once, {} per client address, {} of them kept for requests "
      "with a credential ({} more answer only GET /health); request heads due within {} s",
      limits.connections, limits.per_source, limits.reserve, limits.overflow,
      server_limits.header_timeout.count());
  Listener listener{acceptor, std::move(handler), timeouts_from_env(server_limits.header_timeout),
                    std::make_shared<ConnectionTable>(limits)};
  net::co_spawn(ioc, accept_loop(std::move(listener)), [](const std::exception_ptr& failure) {
    if (failure) spdlog::error("http: the accept loop ended with an exception");
  });
  return bound;
}

}  // namespace abx::daemon::http
