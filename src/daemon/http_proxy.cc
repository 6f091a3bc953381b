#include "daemon/http_proxy.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>

#include "common/json_text.h"
#include "daemon/authentication.h"
#include "daemon/cookies.h"
#include "daemon/http_request.h"
#include "daemon/tcp_progress.h"

namespace abx::daemon::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;

constexpr size_t kMaxProxiedRequest = 64u << 20;
constexpr size_t kReadChunk = 64 * 1024;
// The response's status line and header fields.
constexpr uint32_t kMaxResponseHeader = 32 * 1024;
// What the upstream may have us hold at once: a header, a chunk header, the
// trailer (body bytes pass through to the client). Beast applies no limit
// to a chunked trailer, and one field in it over 64 KiB makes it throw
// std::length_error from inside the read, past every coroutine's try, out of
// io_context::run: the cap keeps the trailer well below that.
constexpr size_t kMaxBuffered = 48 * 1024;
constexpr int kMaxInterimResponses = 16;  // 1xx answers skipped before the real one
// A server that never answers holds two of the daemon's fds: not for ever.
// Generous, for a long poll; the body then streams as long as it flows.
constexpr auto kAnswerTimeout = std::chrono::minutes(5);
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);

// Hop-by-hop headers (RFC 9110 §7.6.1) and the framing we redo ourselves.
bool is_hop_header(const std::string& lower_name) {
  static const std::set<std::string> kHop = {
      "connection", "keep-alive",     "proxy-connection",  "te",    "trailer",
      "upgrade",    "content-length", "transfer-encoding", "expect"};
  return kHop.count(lower_name) > 0;
}

// The caller's credentials for us (API key, access and traffic tokens, E2B's
// routing headers) are never the sandbox's business: code in it is untrusted.
// The dashboard's session cookie and CSRF token are a key's worth: the
// cookie goes on without its session pair, the token not at all.
bool is_credential_header(const std::string& lower_name) {
  return lower_name == "x-api-key" || lower_name == "x-access-token" ||
         lower_name == "authorization" || lower_name == "e2b-traffic-access-token" ||
         lower_name == kCsrfHeader || lower_name.starts_with("e2b-");
}

bhttp::request<bhttp::string_body> upstream_request(const Exchange& exchange, std::string body,
                                                    const std::string& host) {
  const Request& request = exchange.request();
  bhttp::request<bhttp::string_body> out;
  out.method_string(request.method);
  out.target(request.target);
  out.version(11);
  for (const auto& [name, value] : request.headers) {
    const std::string lower_name = lower(name);
    if (is_hop_header(lower_name) || is_credential_header(lower_name)) continue;
    if (lower_name == "cookie") {
      const std::string kept = cookies::without(value, cookies::kSessionCookie);
      if (!kept.empty()) out.set(name, kept);
      continue;
    }
    out.set(name, value);
  }
  if (!host.empty()) out.set(bhttp::field::host, host);
  // A protocol switch (a WebSocket handshake) is the one thing that keeps the
  // connection: the upgrade goes on to the server, hop by hop as RFC 9110 says.
  const bool upgrading = exchange.wants_upgrade();
  if (upgrading) out.set(bhttp::field::upgrade, request.header("upgrade"));
  out.set(bhttp::field::connection, upgrading ? "Upgrade" : "close");
  out.body() = std::move(body);
  out.prepare_payload();
  return out;
}

Headers response_headers(const bhttp::response_parser<bhttp::buffer_body>::value_type& res) {
  Headers out;
  for (const auto& field : res) {
    const std::string name = lower(std::string(field.name_string()));
    if (!is_hop_header(name) && name != "content-type") {
      out.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
  }
  return out;
}

std::string relay_failure(const beast::error_code& ec) {
  const std::string why =
      ec == bhttp::error::buffer_overflow
          ? "its chunk header or trailer is over " + std::to_string(kMaxBuffered >> 10) + " KiB"
          : ec.message();
  return "proxy: the response of the server in the sandbox was cut short: " + why;
}

// Why no response can be passed on: the header did not come or is not one.
std::string header_failure(const beast::error_code& ec, int status) {
  if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow)
    return "its header is over " + std::to_string(kMaxResponseHeader >> 10) + " KiB";
  return ec ? ec.message() : "status " + std::to_string(status);
}

// Relays the body piece by piece until the upstream ends it or the client leaves.
template <class Upstream>
Task<void> relay_body(Exchange& exchange, Upstream& socket, beast::flat_buffer& buffer,
                      bhttp::response_parser<bhttp::buffer_body>& parser) {
  std::string chunk(kReadChunk, '\0');
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    beast::error_code ec;
    co_await bhttp::async_read(socket, buffer, parser, net::redirect_error(net::use_awaitable, ec));
    // TLS ended without close_notify (Python's ssl server, for one): for a
    // body that lasts until the connection ends, that is its end.
    if (ec == net::ssl::error::stream_truncated) parser.put_eof(ec);
    const size_t got = chunk.size() - parser.get().body().size;
    if (got > 0 && !co_await exchange.write_chunk(chunk.substr(0, got))) co_return;
    // Thrown, not a normal end: the client must see a cut-off response, not
    // a complete-looking one (the status went out already; a 502 cannot).
    if (ec && ec != bhttp::error::need_buffer) throw std::runtime_error(relay_failure(ec));
  }
  co_await exchange.finish_stream();
}

// The 101's fields for the client: the server's own (Sec-WebSocket-Accept,
// -Protocol) and the protocol it switched to.
Headers switch_headers(const bhttp::response_parser<bhttp::buffer_body>::value_type& res) {
  Headers out = response_headers(res);
  out.emplace_back("Upgrade", std::string(res[bhttp::field::upgrade]));
  out.emplace_back("Connection", "Upgrade");
  return out;
}

// The server's bytes to the client, starting with those read past its 101.
template <class Upstream>
Task<void> pump_to_client(Exchange& exchange, Upstream& socket, std::string first) {
  if (!first.empty() && !co_await exchange.write_raw(std::move(first))) co_return;
  std::string chunk(kReadChunk, '\0');
  for (;;) {
    beast::error_code ec;
    const size_t got = co_await socket.async_read_some(net::buffer(chunk),
                                                       net::redirect_error(net::use_awaitable, ec));
    if (got > 0 && !co_await exchange.write_raw(chunk.substr(0, got))) co_return;
    if (ec) co_return;
  }
}

template <class Upstream>
Task<void> pump_to_server(Exchange& exchange, Upstream& socket) {
  for (;;) {
    const std::string data = co_await exchange.read_raw_some();
    if (data.empty()) co_return;
    beast::error_code ec;
    co_await net::async_write(socket, net::buffer(data),
                              net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
  }
}

// Ends both connections: whichever pump is still blocked (a write to a side
// that stopped reading included) returns at once.
void end_tunnel(Exchange& exchange, beast::tcp_stream& timed) {
  beast::error_code ignored;
  timed.socket().shutdown(tcp::socket::shutdown_both, ignored);
  timed.socket().cancel(ignored);
  exchange.close_raw();
}

// After a 101: bytes both ways, one chunk in flight each way (a side that
// stops reading stops the other's sender), until either side closes or
// fails; then both connections end. No idle limit: a WebSocket may rightly
// stay quiet for hours; the kernel's keepalive finds a peer that vanished.
template <class Upstream>
Task<void> tunnel(Exchange& exchange, Upstream& socket, beast::tcp_stream& timed,
                  beast::flat_buffer& buffer,
                  const bhttp::response_parser<bhttp::buffer_body>::value_type& head) {
  co_await exchange.switch_protocols(switch_headers(head));
  watch_for_dead_peer(timed.socket().native_handle());
  const auto executor = co_await net::this_coro::executor;
  net::steady_timer to_client_ended(executor, net::steady_timer::time_point::max());
  bool ended = false;
  // Runs beside this coroutine, which waits for it: the references stay valid.
  // Its end ends both sides: pump_to_server may be blocked writing to a server
  // that closed its sending side but never reads (only the client's side
  // ending left it there, holding both sockets for as long as the server liked).
  net::co_spawn(executor, pump_to_client(exchange, socket, beast::buffers_to_string(buffer.data())),
                [&](const std::exception_ptr&) {
                  ended = true;
                  to_client_ended.cancel();
                  end_tunnel(exchange, timed);
                });
  // Whatever happens here, this frame outlives the pump that refers into it.
  std::exception_ptr failed;
  try {
    co_await pump_to_server(exchange, socket);
  } catch (...) {
    failed = std::current_exception();
  }
  // And this end ends both too: pump_to_client may be blocked writing to a
  // client that half-closed and does not read.
  end_tunnel(exchange, timed);
  beast::error_code ignored;
  while (!ended) {
    co_await to_client_ended.async_wait(net::redirect_error(net::use_awaitable, ignored));
  }
  if (failed) std::rethrow_exception(failed);
}

std::string bad_gateway_json(const std::string& message) {
  return json_text::dump(nlohmann::json{{"code", 502}, {"message", message}});
}

// One request out on `socket` (`timed`, or TLS over it), its response back.
template <class Upstream>
Task<void> relay(Exchange& exchange, Upstream& socket, beast::tcp_stream& timed,
                 const bhttp::request<bhttp::string_body>& request) {
  timed.expires_after(kAnswerTimeout);
  beast::error_code ec;
  co_await bhttp::async_write(socket, request, net::redirect_error(net::use_awaitable, ec));
  beast::flat_buffer buffer(kMaxBuffered);
  // Interim answers (100 Continue, 103 Early Hints) are not the response: a
  // client told "100" as the final answer would take the next response on
  // its connection for this request's.
  std::optional<bhttp::response_parser<bhttp::buffer_body>> reading;
  int status = 100;
  for (int interim = 0; !ec && status >= 100 && status < 200 && status != 101; ++interim) {
    if (interim == kMaxInterimResponses) {
      ec = make_error_code(bhttp::error::bad_status);
      break;
    }
    reading.emplace();
    reading->body_limit(std::numeric_limits<std::uint64_t>::max());
    reading->header_limit(kMaxResponseHeader);
    co_await bhttp::async_read_header(socket, buffer, *reading,
                                      net::redirect_error(net::use_awaitable, ec));
    if (!ec) status = static_cast<int>(reading->get().result_int());
  }
  const bool switched = status == 101 && exchange.wants_upgrade();
  if (ec || (status == 101 && !switched) || status > 599) {
    const std::string why = header_failure(ec, status);
    const std::string message =
        "the server in the sandbox gave no HTTP response the proxy can pass on: " + why;
    co_return co_await exchange.respond(502, "application/json", bad_gateway_json(message));
  }
  timed.expires_never();
  if (switched) co_return co_await tunnel(exchange, socket, timed, buffer, reading->get());
  auto& parser = *reading;
  const auto& head = parser.get();
  const std::string content_type(head[bhttp::field::content_type]);
  if (parser.is_done()) {
    co_return co_await exchange.respond(status, content_type, "", response_headers(head));
  }
  co_await exchange.start_stream(status, content_type, response_headers(head));
  co_await relay_body(exchange, socket, buffer, parser);
}

// The server in the sandbox holds its own certificate, self-signed as often
// as not, and is no more trusted for a valid one: TLS here only speaks the
// protocol it asks for, it proves nothing.
net::ssl::context& sandbox_tls_context() {
  static net::ssl::context context = [] {
    net::ssl::context made(net::ssl::context::tls_client);
    made.set_verify_mode(net::ssl::verify_none);
    // Nothing a hostile server can make expensive for us: no finite-field
    // DH (a huge made-up modulus costs a second of CPU), no renegotiation.
    SSL_CTX* native = made.native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(native, "ECDHE+AESGCM:ECDHE+CHACHA20");
    SSL_CTX_set1_groups_list(native, "X25519:P-256");
    SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
    return made;
  }();
  return context;
}

// The name the TLS handshake asks for: the masked host without its port.
std::string server_name(const std::string& host) {
  std::string name = host.substr(0, host.rfind(':'));
  const bool is_name = !name.empty() && name.find_first_not_of("0123456789.") != std::string::npos;
  return is_name ? name : std::string();
}

}  // namespace

Task<void> forward(Exchange& exchange, Upstream upstream) {
  bool fits = true;
  std::string body = co_await read_body(exchange, kMaxProxiedRequest, &fits);
  if (!fits) {
    co_return co_await exchange.respond(413, "application/json",
                                        R"({"code":413,"message":"request body too large"})");
  }
  tcp::socket socket(co_await net::this_coro::executor);
  socket.assign(tcp::v4(), upstream.socket.release());
  beast::tcp_stream stream(std::move(socket));
  const auto request = upstream_request(exchange, std::move(body), upstream.host);
  if (!upstream.tls) co_return co_await relay(exchange, stream, stream, request);
  net::ssl::stream<beast::tcp_stream&> tls(stream, sandbox_tls_context());
  const std::string name = server_name(upstream.host);
  if (!name.empty()) SSL_set_tlsext_host_name(tls.native_handle(), name.c_str());
  beast::error_code ec;
  stream.expires_after(kHandshakeTimeout);
  co_await tls.async_handshake(net::ssl::stream_base::client,
                               net::redirect_error(net::use_awaitable, ec));
  if (ec) {
    const std::string message =
        "the server in the sandbox did not complete a TLS handshake (the port is in "
        "network.httpsPorts): " +
        ec.message();
    co_return co_await exchange.respond(502, "application/json", bad_gateway_json(message));
  }
  co_await relay(exchange, tls, stream, request);
}

}  // namespace abx::daemon::http
