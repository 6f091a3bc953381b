#include "daemon/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <limits>
#include <memory>

#include "daemon/url.h"

namespace abx::daemon::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;
using Parser = bhttp::request_parser<bhttp::buffer_body>;

// Streams may be silent for minutes (keepalive events cover them); an idle
// keep-alive connection between requests is closed after this long, as envd does.
constexpr auto kIdleTimeout = std::chrono::seconds(640);
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kDrainLimit = 1 << 20;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Request to_request(const bhttp::request<bhttp::buffer_body>& message) {
  Request req;
  req.method = std::string(message.method_string());
  req.target = std::string(message.target());
  std::string raw_query;
  url::split_target(req.target, &req.path, &raw_query);
  req.query = url::parse_query(raw_query);
  for (const auto& field : message) {
    std::string& value = req.headers[lower(std::string(field.name_string()))];
    if (!value.empty()) value += ", ";
    value += std::string(field.value());
  }
  return req;
}

class BeastExchange final : public Exchange {
 public:
  BeastExchange(beast::tcp_stream& stream, beast::flat_buffer& buffer, Parser& parser)
      : stream_(stream), buffer_(buffer), parser_(parser), request_(to_request(parser.get())) {
    keep_alive_ = parser.get().keep_alive();
  }

  const Request& request() const override { return request_; }
  bool responded() const { return responded_; }
  bool keep_alive() const { return keep_alive_; }

  Task<std::string> read_body_some() override {
    co_await send_continue_once();
    std::string chunk(kReadChunk, '\0');
    while (!parser_.is_done()) {
      parser_.get().body().data = chunk.data();
      parser_.get().body().size = chunk.size();
      beast::error_code ec;
      co_await bhttp::async_read(stream_, buffer_, parser_,
                                 net::redirect_error(net::use_awaitable, ec));
      if (ec && ec != bhttp::error::need_buffer) throw beast::system_error(ec);
      const size_t got = chunk.size() - parser_.get().body().size;
      if (got > 0) {
        chunk.resize(got);
        co_return chunk;
      }
    }
    co_return std::string{};
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
    co_await bhttp::async_write(stream_, res, net::use_awaitable);
  }

  Task<void> start_stream(int status, std::string content_type, Headers extra) override {
    bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, content_type);
    for (auto& [name, value] : extra) res.set(name, value);
    res.keep_alive(keep_alive_);
    res.chunked(true);
    bhttp::response_serializer<bhttp::empty_body> serializer{res};
    responded_ = true;
    co_await bhttp::async_write_header(stream_, serializer, net::use_awaitable);
  }

  Task<bool> write_chunk(std::string data) override {
    if (data.empty()) co_return true;  // an empty chunk would end the body
    beast::error_code ec;
    co_await net::async_write(stream_, bhttp::make_chunk(net::buffer(data)),
                              net::redirect_error(net::use_awaitable, ec));
    if (ec) keep_alive_ = false;
    co_return !ec;
  }

  Task<void> finish_stream() override {
    co_await net::async_write(stream_, bhttp::make_chunk_last(), net::use_awaitable);
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
    co_await net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                              net::use_awaitable);
  }

  beast::tcp_stream& stream_;
  beast::flat_buffer& buffer_;
  Parser& parser_;
  Request request_;
  bool keep_alive_ = true;
  bool responded_ = false;
  bool continue_sent_ = false;
};

// Runs the handler; turns an escaped exception into a 500 when nothing was sent yet.
Task<bool> handle_one(BeastExchange& exchange, const Handler& handler) {
  std::string failure;
  try {
    co_await handler(exchange);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (failure.empty() && exchange.responded()) co_return exchange.keep_alive();
  if (exchange.responded()) {
    spdlog::debug("http: {} {} ended early: {}", exchange.request().method,
                  exchange.request().target, failure);
    co_return false;
  }
  if (failure.empty()) failure = "the handler sent no response";
  spdlog::error("http: {} {}: {}", exchange.request().method, exchange.request().target, failure);
  co_await exchange.respond(500, "application/json", R"({"code":500,"message":"internal error"})",
                            {});
  co_return exchange.keep_alive();
}

Task<void> serve_connection(tcp::socket socket, Handler handler) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  try {
    for (;;) {
      Parser parser;
      parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // uploads stream to disk
      parser.header_limit(64 * 1024);
      stream.expires_after(kIdleTimeout);
      beast::error_code ec;
      co_await bhttp::async_read_header(stream, buffer, parser,
                                        net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        spdlog::debug("http: read header: {}", ec.message());
        break;
      }
      stream.expires_never();
      BeastExchange exchange(stream, buffer, parser);
      if (!co_await handle_one(exchange, handler)) break;
      if (!co_await exchange.drain_body()) break;
    }
  } catch (const std::exception& e) {
    spdlog::debug("http: connection closed: {}", e.what());
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

Task<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor, Handler handler) {
  auto& ioc = static_cast<net::io_context&>(acceptor->get_executor().context());
  for (;;) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor->async_accept(
        net::make_strand(ioc), net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      spdlog::warn("http: accept: {}", ec.message());
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);  // stream frames go out at once
    auto executor = socket.get_executor();
    net::co_spawn(executor, serve_connection(std::move(socket), handler), net::detached);
  }
}

}  // namespace

std::string Request::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

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

Result<uint16_t> listen(net::io_context& ioc, const std::string& host_port, Handler handler) {
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
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{"listen on " + host_port, ec.value(), ec.message()};
  const uint16_t bound = acceptor->local_endpoint().port();
  net::co_spawn(ioc, accept_loop(acceptor, std::move(handler)), net::detached);
  return bound;
}

}  // namespace abx::daemon::http
