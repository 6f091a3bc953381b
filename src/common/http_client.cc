#include "common/http_client.h"

#include <fcntl.h>
#include <poll.h>
#include <strings.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <limits>
#include <optional>

#include "common/fd_io.h"

namespace abx::http {
namespace net = boost::asio;
namespace beast_http = boost::beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// A body type that only collects what arrives, so the caller can take it
// piece by piece instead of holding a whole (possibly huge) body.
struct PendingBody {
  using value_type = std::string;

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(beast_http::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>&, boost::system::error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
      ec = {};
      const auto size = net::buffer_size(buffers);
      const auto old = body_.size();
      body_.resize(old + size);
      net::buffer_copy(net::buffer(body_.data() + old, size), buffers);
      return size;
    }
    void finish(boost::system::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

Error network_error(const std::string& step, const boost::system::error_code& ec) {
  return Error::with_message(step + ": " + ec.message());
}

}  // namespace

std::string find_header(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), name.size()) == 0) {
      return value;
    }
  }
  return {};
}

BodySource fd_body(int fd, std::string what, size_t chunk, std::function<void(size_t)> on_piece) {
  return
      [fd, what = std::move(what), chunk, on_piece = std::move(on_piece)]() -> Result<std::string> {
        std::string piece(chunk, '\0');
        const ssize_t n = read_some(fd, piece.data(), piece.size());
        if (n < 0) return Error::from_errno("read " + what);
        piece.resize(static_cast<size_t>(n));
        if (on_piece) on_piece(piece.size());
        return piece;
      };
}

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char raw : text) {
    const auto c = static_cast<unsigned char>(raw);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

Result<Url> Url::parse(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  Url url;
  url.tls = text.starts_with("https://");
  if (!url.tls && !text.starts_with("http://")) {
    return Error::with_message("bad URL '" + std::string(text) +
                               "': expected http://HOST:PORT or https://HOST[:PORT]");
  }
  const std::string scheme = url.tls ? "https://" : "http://";
  text.remove_prefix(scheme.size());
  const auto slash = text.find('/');
  std::string_view authority = text.substr(0, slash);
  if (slash != std::string_view::npos) url.prefix = std::string(text.substr(slash));
  while (url.prefix.ends_with('/')) url.prefix.pop_back();
  const auto colon = authority.rfind(':');
  const bool has_port =
      colon != std::string_view::npos && authority.find(']', colon) == authority.npos;
  url.host = std::string(has_port ? authority.substr(0, colon) : authority);
  url.port = has_port ? std::string(authority.substr(colon + 1)) : (url.tls ? "443" : "80");
  if (url.host.starts_with('[') && url.host.ends_with(']'))
    url.host = url.host.substr(1, url.host.size() - 2);
  if (url.host.empty() || url.port.empty()) {
    return Error::with_message("bad URL '" + scheme + std::string(text) + "': expected " + scheme +
                               "HOST:PORT");
  }
  return url;
}

std::string Url::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

std::string Url::str() const { return (tls ? "https://" : "http://") + authority() + prefix; }

namespace {

// One verifying client context per process: loading the CA bundle (the
// system's, or SSL_CERT_FILE / SSL_CERT_DIR as OpenSSL reads them) costs
// milliseconds, and only https URLs pay it.
ssl::context& tls_context() {
  static ssl::context context = [] {
    ssl::context made(ssl::context::tls_client);
    boost::system::error_code ignored;  // no bundle: every handshake then fails to verify
    made.set_default_verify_paths(ignored);
    made.set_verify_mode(ssl::verify_peer, ignored);
    SSL_CTX_set_min_proto_version(made.native_handle(), TLS1_2_VERSION);
    return made;
  }();
  return context;
}

// SNI and the name (or address) the server's certificate must carry.
Status expect_peer(SSL* session, const std::string& host) {
  boost::system::error_code not_ip;
  (void)net::ip::make_address(host, not_ip);
  if (!not_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session), host.c_str()) != 1)
      return Error{"TLS: cannot check the address " + host};
    return {};
  }
  if (SSL_set_tlsext_host_name(session, host.c_str()) != 1 ||
      SSL_set1_host(session, host.c_str()) != 1)
    return Error{"TLS: cannot check the name " + host};
  return {};
}

}  // namespace

struct ResponseStream::Impl {
  net::io_context io;
  tcp::socket socket{io};
  std::unique_ptr<ssl::stream<tcp::socket&>> tls;  // https only
  boost::beast::flat_buffer buffer;
  beast_http::response_parser<PendingBody> parser;
  std::optional<Clock::time_point> deadline;

  // Bytes OpenSSL has read off the socket but not handed out yet.
  bool tls_pending() const { return tls && SSL_has_pending(tls->native_handle()) == 1; }

  Status wait_readable() {
    if (!deadline || tls_pending()) return {};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
    pollfd pfd{socket.native_handle(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) == 0) {
      return Error{"no answer from the server in time", ETIMEDOUT};
    }
    return {};
  }

  // Feeds buffered bytes to the parser; eager parsing leaves only an
  // incomplete element in the buffer, so polling the socket is then correct.
  Status parse_buffered() {
    while (buffer.size() > 0 && !parser.is_done()) {
      boost::system::error_code ec;
      const auto used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == beast_http::error::need_more) break;
      if (ec) return network_error("bad HTTP response", ec);
      if (used == 0) break;
    }
    return {};
  }

  // Runs the io_context until the one asynchronous operation started is
  // done (`ec` no longer would_block) or `limit` passes; then the socket
  // closes and this returns false.
  bool finished_by(boost::system::error_code& ec, std::optional<Clock::time_point> limit) {
    if (limit) {
      io.run_until(*limit);
    } else {
      io.run();
    }
    const bool done = ec != net::error::would_block;
    if (!done) {
      boost::system::error_code ignored;
      socket.close(ignored);
      io.run();  // lets the operation's handler see the close
    }
    io.restart();
    return done;
  }

  // A TLS read waits for a whole record: one whose bytes stop coming must
  // not outlast the deadline (a plain read returns what has arrived).
  Result<size_t> read_some(net::mutable_buffer space, boost::system::error_code& ec) {
    if (!tls) return socket.read_some(space, ec);
    if (!deadline) return tls->read_some(space, ec);
    size_t got = 0;
    ec = net::error::would_block;
    tls->async_read_some(space, [&](const boost::system::error_code& done, size_t n) {
      ec = done;
      got = n;
    });
    if (!finished_by(ec, deadline)) return Error{"no answer from the server in time", ETIMEDOUT};
    return got;
  }

  Status read_more() {
    if (auto st = wait_readable(); !st) return st;
    boost::system::error_code ec;
    auto n = read_some(buffer.prepare(64 * 1024), ec);
    if (!n) return n.error();
    buffer.commit(*n);
    // A TLS peer that closes without close_notify: the end, unless only the
    // close could say where the body ends (then it may have been cut).
    if (ec == ssl::error::stream_truncated) {
      const bool close_delimited =
          parser.is_header_done() && !parser.chunked() && !parser.content_length();
      if (close_delimited) return Error{"the TLS connection was cut mid-response"};
      ec = net::error::eof;
    }
    if (ec == net::error::eof) {
      if (!parser.got_some()) return Error{"the server closed the connection without an answer"};
      parser.put_eof(ec);
      if (ec)
        return Error::with_message("the server closed the connection mid-response: " +
                                   ec.message());
      return {};
    }
    if (ec) return network_error("read HTTP response", ec);
    return parse_buffered();
  }
};

ResponseStream::ResponseStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ResponseStream::~ResponseStream() = default;

int ResponseStream::status() const { return static_cast<int>(impl_->parser.get().result_int()); }

std::string ResponseStream::header(std::string_view name) const {
  auto it = impl_->parser.get().find(boost::string_view(name.data(), name.size()));
  if (it == impl_->parser.get().end()) return {};
  return std::string(it->value());
}

Headers ResponseStream::headers() const {
  Headers out;
  for (const auto& field : impl_->parser.get()) {
    out.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return out;
}

int ResponseStream::fd() const { return impl_->socket.native_handle(); }

bool ResponseStream::has_buffered() const {
  return !impl_->parser.get().body().empty() || impl_->tls_pending();
}

bool ResponseStream::done() const { return impl_->parser.is_done() && !has_buffered(); }

Result<std::string> ResponseStream::read_some() {
  auto& body = impl_->parser.get().body();
  if (body.empty() && !impl_->parser.is_done()) {
    if (auto st = impl_->read_more(); !st) return st.error();
  }
  return std::exchange(body, std::string());
}

Result<std::string> ResponseStream::read_all() {
  std::string all;
  while (!done()) {
    auto piece = read_some();
    if (!piece) return piece.error();
    all += *piece;
  }
  return all;
}

namespace {

template <class Stream>
Status write_chunked_body(Stream& socket, const BodySource& source) {
  boost::system::error_code ec;
  while (true) {
    auto piece = source();
    if (!piece) return piece.error();
    if (piece->empty()) break;
    net::write(socket, beast_http::make_chunk(net::buffer(*piece)), ec);
    if (ec) return network_error("send request body", ec);
  }
  net::write(socket, beast_http::make_chunk_last(), ec);
  if (ec) return network_error("send request body", ec);
  return {};
}

template <class Body>
void fill_header(beast_http::request<Body>& req, const Url& base, const Request& request) {
  req.method_string(request.method);
  req.target(base.prefix + request.target);
  req.version(11);
  req.set(beast_http::field::host, base.authority());
  req.set(beast_http::field::connection, "close");
  req.set(beast_http::field::user_agent, "abx/" ABX_VERSION);
  for (const auto& [key, value] : request.headers) req.set(key, value);
}

template <class Stream>
Status send_request(Stream& socket, const Url& base, const Request& request,
                    const BodySource* body_source) {
  boost::system::error_code ec;
  if (body_source) {
    beast_http::request<beast_http::empty_body> req;
    fill_header(req, base, request);
    req.chunked(true);
    beast_http::request_serializer<beast_http::empty_body> serializer{req};
    beast_http::write_header(socket, serializer, ec);
    if (ec) return network_error("send request", ec);
    return write_chunked_body(socket, *body_source);
  }
  beast_http::request<beast_http::string_body> req;
  fill_header(req, base, request);
  req.body() = request.body;
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    req.prepare_payload();
  }
  beast_http::write(socket, req, ec);
  if (ec) return network_error("send request", ec);
  return {};
}

// The TCP connect and the TLS handshake, each bounded by the stream's
// deadline, or by this for a call with none (a streamed exec): an address
// that drops SYNs, or a server that takes the connection and never answers,
// must not hang the CLI.
constexpr auto kHandshakeLimit = std::chrono::seconds(30);

// Like net::connect, but the socket is close-on-exec (the daemon, its /mcp
// route, uses this client, and its helpers must not inherit the socket), and
// each address is tried until `limit` at most. false: the limit passed.
bool connect_cloexec(ResponseStream::Impl& impl, const tcp::resolver::results_type& endpoints,
                     boost::system::error_code& ec) {
  const auto limit = impl.deadline.value_or(Clock::now() + kHandshakeLimit);
  ec = net::error::host_not_found;
  for (const auto& entry : endpoints) {
    boost::system::error_code ignored;
    impl.socket.close(ignored);
    impl.socket.open(entry.endpoint().protocol(), ec);
    if (ec) continue;
    ::fcntl(impl.socket.native_handle(), F_SETFD, FD_CLOEXEC);
    ec = net::error::would_block;
    impl.socket.async_connect(entry.endpoint(),
                              [&ec](const boost::system::error_code& done) { ec = done; });
    if (!impl.finished_by(ec, limit)) return false;
    if (!ec) return true;
  }
  return true;
}

Status start_tls(ResponseStream::Impl& impl, const Url& base) {
  impl.tls = std::make_unique<ssl::stream<tcp::socket&>>(impl.socket, tls_context());
  SSL* session = impl.tls->native_handle();
  if (auto st = expect_peer(session, base.host); !st) return st;
  boost::system::error_code ec = net::error::would_block;
  impl.tls->async_handshake(ssl::stream_base::client,
                            [&ec](const boost::system::error_code& done) { ec = done; });
  const auto limit = impl.deadline.value_or(Clock::now() + kHandshakeLimit);
  if (!impl.finished_by(ec, limit))
    return Error{"no TLS handshake from " + base.str() + " in time", ETIMEDOUT};
  if (ec && SSL_get_verify_result(session) != X509_V_OK)
    return Error::with_message("cannot reach " + base.str() +
                               ": its TLS certificate is not trusted (" +
                               X509_verify_cert_error_string(SSL_get_verify_result(session)) +
                               "); set SSL_CERT_FILE to a CA bundle that signs it");
  if (ec) return network_error("cannot reach " + base.str() + ": TLS handshake", ec);
  return {};
}

}  // namespace

Result<std::unique_ptr<ResponseStream>> Client::open(const Request& request,
                                                     const BodySource* body_source,
                                                     std::chrono::milliseconds timeout) const {
  auto impl = std::make_unique<ResponseStream::Impl>();
  if (timeout.count() > 0) impl->deadline = Clock::now() + timeout;
  // Not boost::none: Beast 1.74 then rejects every Content-Length body.
  impl->parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  impl->parser.eager(true);
  boost::system::error_code ec;
  tcp::resolver resolver(impl->io);
  const auto endpoints = resolver.resolve(base_.host, base_.port, ec);
  if (!ec && !connect_cloexec(*impl, endpoints, ec))
    return Error{"cannot reach " + base_.str() +
                     ": no answer to the connection in time; check "
                     "the address and that nothing between drops the traffic",
                 ETIMEDOUT};
  if (ec) return Error::with_message("cannot reach " + base_.str() + ": " + ec.message());
  if (base_.tls)
    if (auto st = start_tls(*impl, base_); !st) return st.error();
  const Status sent = impl->tls ? send_request(*impl->tls, base_, request, body_source)
                                : send_request(impl->socket, base_, request, body_source);
  // A server may answer (e.g. 404) and close before taking the whole body;
  // its answer says more than the broken pipe does.
  while (!impl->parser.is_header_done()) {
    if (auto st = impl->read_more(); !st) return sent ? st.error() : sent.error();
  }
  return std::make_unique<ResponseStream>(std::move(impl));
}

Result<Response> Client::send(const Request& request, std::chrono::milliseconds timeout) const {
  auto stream = open(request, nullptr, timeout);
  if (!stream) return stream.error();
  auto body = (*stream)->read_all();
  if (!body) return body.error();
  Response response;
  response.status = (*stream)->status();
  response.headers = (*stream)->headers();
  response.body = std::move(*body);
  return response;
}

}  // namespace abx::http
