#include "egress/dns_forwarder.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

// GCC 12 at -O2 misreads Asio's coroutine-frame allocator (operator new/delete
// pairs in boost/asio/impl/awaitable.hpp) as mismatched: a known false positive.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "egress/repeat_gate.h"

namespace abx::egress {
namespace dns {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxName = 255;  // wire length, the final zero byte included

uint16_t read16(std::span<const uint8_t> packet, size_t at) {
  return static_cast<uint16_t>(packet[at] << 8 | packet[at + 1]);
}

// A name's label bytes we accept: what host names, SRV/DKIM labels and the
// like use. A '.' inside a label would make two different names look alike
// to the policy; control bytes and spaces have no business in a host name.
bool plain_label_byte(uint8_t c) { return c > 0x20 && c < 0x7f && c != '.'; }

// The single question after the header, with QDCOUNT checked to be 1.
std::optional<Question> parse_question(std::span<const uint8_t> packet) {
  if (packet.size() < kHeaderSize || read16(packet, 4) != 1) return std::nullopt;
  Question question;
  size_t at = kHeaderSize;
  size_t wire_length = 1;
  for (;;) {
    if (at >= packet.size()) return std::nullopt;
    const size_t length = packet[at++];
    if (length == 0) break;
    // Also refuses compression pointers (0xC0) and the reserved label types.
    if (length > kMaxLabel) return std::nullopt;
    wire_length += length + 1;
    if (wire_length > kMaxName || at + length > packet.size()) return std::nullopt;
    if (!question.name.empty()) question.name += '.';
    for (size_t i = 0; i < length; ++i) {
      const uint8_t c = packet[at + i];
      if (!plain_label_byte(c)) return std::nullopt;
      question.name += static_cast<char>(std::tolower(c));
    }
    at += length;
  }
  if (at + 4 > packet.size()) return std::nullopt;
  question.type = read16(packet, at);
  question.end = at + 4;
  return question;
}

bool is_response(std::span<const uint8_t> packet) { return (packet[2] & 0x80) != 0; }
uint8_t opcode(std::span<const uint8_t> packet) { return (packet[2] >> 3) & 0x0f; }

}  // namespace

std::optional<Question> parse_query(std::span<const uint8_t> packet) {
  if (packet.size() < kHeaderSize || is_response(packet) || opcode(packet) != 0)
    return std::nullopt;
  return parse_question(packet);
}

std::optional<std::string> query_name(std::span<const uint8_t> packet) {
  auto question = parse_query(packet);
  if (!question) return std::nullopt;
  return std::move(question->name);
}

bool answers(std::span<const uint8_t> reply, std::span<const uint8_t> query, size_t question_end) {
  if (question_end < kHeaderSize + 5 || query.size() < question_end) return false;
  if (reply.size() < question_end || !is_response(reply) || read16(reply, 4) != 1) return false;
  const size_t name_end = question_end - 4;
  for (size_t i = kHeaderSize; i < name_end; ++i)
    if (std::tolower(reply[i]) != std::tolower(query[i])) return false;
  return std::equal(reply.begin() + static_cast<ptrdiff_t>(name_end),
                    reply.begin() + static_cast<ptrdiff_t>(question_end),
                    query.begin() + static_cast<ptrdiff_t>(name_end));
}

std::vector<uint8_t> error_reply(std::span<const uint8_t> query, uint8_t rcode) {
  const auto question = parse_query(query);
  if (!question) return {};
  std::vector<uint8_t> reply(query.begin(), query.begin() + static_cast<ptrdiff_t>(question->end));
  reply[2] = static_cast<uint8_t>(0x80 | (query[2] & 0x01));  // QR, opcode QUERY, RD as asked
  reply[3] = static_cast<uint8_t>(0x80 | (rcode & 0x0f));     // RA
  std::fill(reply.begin() + 6, reply.begin() + kHeaderSize, uint8_t{0});  // AN, NS, AR counts
  return reply;
}

std::vector<sockaddr_in> parse_resolv_conf(std::string_view text) {
  std::vector<sockaddr_in> servers;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string keyword, address;
    if (!(words >> keyword >> address) || keyword != "nameserver") continue;
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(53);
    if (::inet_pton(AF_INET, address.c_str(), &server.sin_addr) == 1) servers.push_back(server);
  }
  return servers;
}

}  // namespace dns

namespace {

namespace net = boost::asio;
using net::ip::tcp;
using net::ip::udp;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

// A query is small (a name, EDNS options); anything larger is not one.
constexpr size_t kMaxQuery = 4096;
constexpr size_t kMaxUdpMessage = 65535;

void write16(Bytes& packet, size_t at, uint16_t value) {
  packet[at] = static_cast<uint8_t>(value >> 8);
  packet[at + 1] = static_cast<uint8_t>(value & 0xff);
}

uint16_t read_id(std::span<const uint8_t> packet) {
  return static_cast<uint16_t>(packet[0] << 8 | packet[1]);
}

// An ID an off-path spoofer has to guess: from the system's CSPRNG.
std::optional<uint16_t> random_id() {
  uint8_t bytes[2];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return std::nullopt;
  return static_cast<uint16_t>(bytes[0] << 8 | bytes[1]);
}

Bytes framed(const Bytes& message) {
  Bytes out(message.size() + 2);
  write16(out, 0, static_cast<uint16_t>(message.size()));
  std::copy(message.begin(), message.end(), out.begin() + 2);
  return out;
}

udp::endpoint to_endpoint(const sockaddr_in& address) {
  return {net::ip::address_v4(ntohl(address.sin_addr.s_addr)), ntohs(address.sin_port)};
}

void log_failure(const std::exception_ptr& failure) {
  if (!failure) return;
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    spdlog::debug("dns: a task failed: {}", e.what());
  }
}

// A UDP query forwarded upstream and waiting for the answer.
struct PendingQuery {
  explicit PendingQuery(net::io_context& io) : wake(io) {}
  udp::endpoint client;
  uint32_t source = 0;
  uint16_t client_id = 0;
  Bytes query;  // carrying the forwarder's ID
  size_t question_end = 0;
  udp::endpoint upstream;  // the one asked now: only its answer counts
  Bytes reply;
  net::steady_timer wake;  // cancelled when the reply arrives
};

// A TCP connection whose every step has a deadline, enforced by close_when_late.
struct TimedSocket {
  explicit TimedSocket(tcp::socket s) : socket(std::move(s)), deadline(socket.get_executor()) {}
  tcp::socket socket;
  net::steady_timer deadline;
};

net::awaitable<void> close_when_late(std::shared_ptr<TimedSocket> connection) {
  while (connection->socket.is_open()) {
    boost::system::error_code ec;
    co_await connection->deadline.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (connection->deadline.expiry() <= Clock::now()) connection->socket.close(ec);
  }
}

void finish(TimedSocket& connection) {
  boost::system::error_code ec;
  connection.socket.close(ec);
  connection.deadline.cancel();
}

// One length-prefixed DNS message of 12..max_size bytes; nullopt on error or
// a length outside those bounds (then the caller closes the connection).
net::awaitable<std::optional<Bytes>> read_frame(tcp::socket& socket, size_t max_size) {
  uint8_t prefix[2];
  boost::system::error_code ec;
  co_await net::async_read(socket, net::buffer(prefix),
                           net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return std::nullopt;
  const size_t size = static_cast<size_t>(prefix[0] << 8 | prefix[1]);
  if (size < dns::kHeaderSize || size > max_size) co_return std::nullopt;
  Bytes message(size);
  co_await net::async_read(socket, net::buffer(message),
                           net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return std::nullopt;
  co_return message;
}

// Adds one to a per-source count unless it is at `limit`.
bool take(std::unordered_map<uint32_t, size_t>& counts, uint32_t source, size_t limit) {
  size_t& count = counts[source];
  if (count >= limit) return false;
  ++count;
  return true;
}

// A token bucket per source: `rate` tokens a second, at most `burst` saved.
class RateLimit {
 public:
  RateLimit(double rate, double burst) : rate_(rate), burst_(burst) {}
  bool allow(uint32_t source) {
    const auto now = std::chrono::steady_clock::now();
    auto [it, fresh] = buckets_.try_emplace(source, Bucket{burst_, now});
    Bucket& bucket = it->second;
    if (!fresh) {
      const std::chrono::duration<double> waited = now - bucket.last;
      bucket.tokens = std::min(burst_, bucket.tokens + waited.count() * rate_);
      bucket.last = now;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  double rate_, burst_;
  // Keyed by sandbox address only (others are dropped before): bounded by the pool.
  std::unordered_map<uint32_t, Bucket> buckets_;
};

void give_back(std::unordered_map<uint32_t, size_t>& counts, uint32_t source) {
  const auto it = counts.find(source);
  if (it != counts.end() && --it->second == 0) counts.erase(it);
}

}  // namespace

class DnsForwarder::Impl {
 public:
  explicit Impl(DnsConfig config)
      : config_(std::move(config)), rate_(config_.queries_per_second, config_.query_burst) {
    for (const sockaddr_in& upstream : config_.upstreams)
      upstreams_.push_back(to_endpoint(upstream));
  }
  ~Impl() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status bind(uint16_t port);
  void run();
  uint16_t port() const { return port_; }

 private:
  Status bind_once(uint16_t port);

  net::awaitable<void> receive_queries();
  void handle_udp_query(std::span<const uint8_t> query, const udp::endpoint& client);
  net::awaitable<void> forward_udp(std::shared_ptr<PendingQuery> pending, uint16_t id);
  net::awaitable<void> receive_replies();
  void accept_udp_reply(std::span<const uint8_t> reply, const udp::endpoint& from);
  void send_to_client(const Bytes& message, const udp::endpoint& client);
  std::optional<uint16_t> free_id() const;

  net::awaitable<void> accept_tcp();
  net::awaitable<void> serve_tcp(std::shared_ptr<TimedSocket> client, uint32_t source);
  net::awaitable<std::optional<Bytes>> answer_tcp(uint32_t source, Bytes query);
  net::awaitable<std::optional<Bytes>> ask_over_tcp(const udp::endpoint& upstream,
                                                    const Bytes& query, size_t question_end);

  net::io_context io_{1};
  DnsConfig config_;
  std::vector<udp::endpoint> upstreams_;
  udp::socket clients_{io_};       // queries from sandboxes, replies to them
  udp::socket upstream_udp_{io_};  // queries to upstreams, their replies
  tcp::acceptor acceptor_{io_};
  uint16_t port_ = 0;
  std::unordered_map<uint16_t, std::shared_ptr<PendingQuery>> pending_;  // by forwarder ID
  std::unordered_map<uint32_t, size_t> pending_per_source_, tcp_per_source_;
  size_t tcp_connections_ = 0;
  RateLimit rate_;      // touched on the forwarder's thread only
  RepeatGate repeats_;  // likewise
  void record(uint32_t source, const Policy& policy, const std::string& name, bool allowed);
  std::thread thread_;
};

// Asio opens sockets without SOCK_CLOEXEC: children the daemon starts
// (mmdebstrap, lxcfs) must not inherit them (apt's `cat >&10` breaks when
// leaked fds push its pipe past 9, and a child would hold our ports).
static void close_on_exec(int fd) { ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC); }

Status DnsForwarder::Impl::bind_once(uint16_t port) {
  boost::system::error_code ec;
  clients_.open(udp::v4(), ec);
  if (!ec) close_on_exec(clients_.native_handle());
  if (!ec) clients_.bind({udp::v4(), port}, ec);
  if (ec) return Error{"dns forwarder: bind udp port " + std::to_string(port), ec.value()};
  const uint16_t bound = clients_.local_endpoint(ec).port();
  acceptor_.open(tcp::v4(), ec);
  if (!ec) close_on_exec(acceptor_.native_handle());
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind({tcp::v4(), bound}, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{"dns forwarder: bind tcp port " + std::to_string(bound), ec.value()};
  port_ = bound;
  return {};
}

Status DnsForwarder::Impl::bind(uint16_t port) {
  // With port 0 the number the kernel picks for UDP may be taken for TCP: retry.
  Status bound = bind_once(port);
  for (int attempt = 0; !bound && port == 0 && bound.error().errnum == EADDRINUSE && attempt < 8;
       ++attempt) {
    boost::system::error_code ec;
    clients_.close(ec);
    acceptor_.close(ec);
    bound = bind_once(port);
  }
  if (!bound) return bound;
  boost::system::error_code ec;
  clients_.non_blocking(true, ec);  // replies are sent at once or dropped, as UDP may be
  upstream_udp_.open(udp::v4(), ec);
  if (!ec) close_on_exec(upstream_udp_.native_handle());
  if (!ec) upstream_udp_.non_blocking(true, ec);
  if (ec) return Error{"dns forwarder: open the upstream socket", ec.value()};
  return {};
}

void DnsForwarder::Impl::run() {
  net::co_spawn(io_, receive_queries(), log_failure);
  net::co_spawn(io_, receive_replies(), log_failure);
  net::co_spawn(io_, accept_tcp(), log_failure);
  thread_ = std::thread([this] { io_.run(); });
}

// ---- UDP -------------------------------------------------------------------

net::awaitable<void> DnsForwarder::Impl::receive_queries() {
  Bytes buffer(kMaxUdpMessage);
  udp::endpoint client;
  while (clients_.is_open()) {
    boost::system::error_code ec;
    const size_t n = co_await clients_.async_receive_from(
        net::buffer(buffer), client, net::redirect_error(net::use_awaitable, ec));
    if (!ec) handle_udp_query({buffer.data(), n}, client);
  }
}

// One event per sandbox, name and verdict in each window (repeat_gate.h): a
// resolver retrying, or a loop asking the same name, is one line with a count.
void DnsForwarder::Impl::record(uint32_t source, const Policy& policy, const std::string& name,
                                bool allowed) {
  if (!config_.record) return;
  const std::string key = std::to_string(source) + (allowed ? " + " : " - ") + name;
  const std::optional<uint64_t> held = repeats_.pass(key);
  if (!held) return;
  NetworkEvent event;
  event.kind = NetworkEvent::Kind::kDns;
  event.host = name;
  event.allowed = allowed;
  event.reason = deciding_rule(policy, 0, name);
  event.repeats = *held;
  config_.record(source, event);
}

void DnsForwarder::Impl::handle_udp_query(std::span<const uint8_t> query,
                                          const udp::endpoint& client) {
  const uint32_t source = client.address().to_v4().to_uint();
  if (query.size() > kMaxQuery) return;
  const std::shared_ptr<const Policy> policy = config_.policy_for(source);
  if (!policy) return;  // not a sandbox: no word, no log of names
  if (!rate_.allow(source)) return;
  const auto question = dns::parse_query(query);
  if (!question) return;
  const bool allowed = resolves(*policy, question->name);
  record(source, *policy, question->name, allowed);
  if (!allowed) {
    spdlog::debug("dns: {} denied for {}", question->name, client.address().to_string());
    send_to_client(dns::error_reply(query, dns::kNxDomain), client);
    return;
  }
  if (pending_.size() >= config_.max_pending ||
      !take(pending_per_source_, source, config_.max_pending_per_source)) {
    spdlog::debug("dns: pending table full, dropped a query from {}", client.address().to_string());
    return;
  }
  const auto id = free_id();
  if (!id) {
    give_back(pending_per_source_, source);
    return;
  }
  auto pending = std::make_shared<PendingQuery>(io_);
  pending->client = client;
  pending->source = source;
  pending->client_id = read_id(query);
  pending->query.assign(query.begin(), query.end());
  pending->question_end = question->end;
  write16(pending->query, 0, *id);
  pending_.emplace(*id, pending);
  net::co_spawn(io_, forward_udp(std::move(pending), *id), log_failure);
}

// An ID no pending query holds, so replies map to one query only.
std::optional<uint16_t> DnsForwarder::Impl::free_id() const {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const auto id = random_id();
    if (id && !pending_.contains(*id)) return id;
  }
  return std::nullopt;
}

net::awaitable<void> DnsForwarder::Impl::forward_udp(std::shared_ptr<PendingQuery> pending,
                                                     uint16_t id) {
  for (const udp::endpoint& upstream : upstreams_) {
    pending->upstream = upstream;
    boost::system::error_code ec;
    upstream_udp_.send_to(net::buffer(pending->query), upstream, 0, ec);
    if (ec) continue;
    pending->wake.expires_after(config_.upstream_timeout);
    co_await pending->wake.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (!pending->reply.empty()) break;
  }
  Bytes& answer = pending->reply;
  if (answer.empty()) {
    write16(pending->query, 0, pending->client_id);
    answer = dns::error_reply(pending->query, dns::kServFail);
  } else {
    write16(answer, 0, pending->client_id);
  }
  send_to_client(answer, pending->client);
  pending_.erase(id);
  give_back(pending_per_source_, pending->source);
}

net::awaitable<void> DnsForwarder::Impl::receive_replies() {
  Bytes buffer(kMaxUdpMessage);
  udp::endpoint from;
  while (upstream_udp_.is_open()) {
    boost::system::error_code ec;
    const size_t n = co_await upstream_udp_.async_receive_from(
        net::buffer(buffer), from, net::redirect_error(net::use_awaitable, ec));
    if (!ec) accept_udp_reply({buffer.data(), n}, from);
  }
}

// Taken only from the upstream asked, with the ID and the question sent:
// anything else is a stray or a spoofing attempt.
void DnsForwarder::Impl::accept_udp_reply(std::span<const uint8_t> reply,
                                          const udp::endpoint& from) {
  if (reply.size() < dns::kHeaderSize) return;
  const auto it = pending_.find(read_id(reply));
  if (it == pending_.end()) return;
  PendingQuery& pending = *it->second;
  if (from != pending.upstream || !pending.reply.empty() ||
      !dns::answers(reply, pending.query, pending.question_end)) {
    spdlog::debug("dns: ignored a reply from {} that matches no query", from.address().to_string());
    return;
  }
  pending.reply.assign(reply.begin(), reply.end());
  pending.wake.cancel();
}

void DnsForwarder::Impl::send_to_client(const Bytes& message, const udp::endpoint& client) {
  boost::system::error_code ec;
  clients_.send_to(net::buffer(message), client, 0, ec);
  if (ec) spdlog::debug("dns: reply to {} dropped: {}", client.address().to_string(), ec.message());
}

// ---- TCP -------------------------------------------------------------------

net::awaitable<void> DnsForwarder::Impl::accept_tcp() {
  net::steady_timer backoff(io_);
  while (acceptor_.is_open()) {
    boost::system::error_code ec;
    tcp::socket socket =
        co_await acceptor_.async_accept(net::redirect_error(net::use_awaitable, ec));
    if (ec == net::error::operation_aborted) break;
    if (ec) {  // out of descriptors, say: let some connections end first
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
      continue;
    }
    close_on_exec(socket.native_handle());
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) continue;
    const uint32_t source = peer.address().to_v4().to_uint();
    if (!config_.policy_for(source) || tcp_connections_ >= config_.max_tcp_connections ||
        !take(tcp_per_source_, source, config_.max_tcp_per_source)) {
      continue;  // closes it
    }
    ++tcp_connections_;
    auto client = std::make_shared<TimedSocket>(std::move(socket));
    client->deadline.expires_after(config_.tcp_idle_timeout);
    net::co_spawn(io_, close_when_late(client), log_failure);
    net::co_spawn(io_, serve_tcp(std::move(client), source), log_failure);
  }
}

// Queries in turn until the client is idle too long, sends something that is
// not a query, or closes.
net::awaitable<void> DnsForwarder::Impl::serve_tcp(std::shared_ptr<TimedSocket> client,
                                                   uint32_t source) {
  const auto answer_time =
      config_.tcp_idle_timeout + config_.upstream_timeout * static_cast<int>(upstreams_.size());
  for (;;) {
    client->deadline.expires_after(config_.tcp_idle_timeout);
    std::optional<Bytes> query = co_await read_frame(client->socket, kMaxQuery);
    if (!query) break;
    client->deadline.expires_after(answer_time);
    const std::optional<Bytes> reply = co_await answer_tcp(source, std::move(*query));
    if (!reply) break;
    boost::system::error_code ec;
    co_await net::async_write(client->socket, net::buffer(*reply),
                              net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
  }
  finish(*client);
  --tcp_connections_;
  give_back(tcp_per_source_, source);
}

// The framed reply to one query, or nullopt to close the connection.
net::awaitable<std::optional<Bytes>> DnsForwarder::Impl::answer_tcp(uint32_t source, Bytes query) {
  const std::shared_ptr<const Policy> policy = config_.policy_for(source);
  if (!policy || !rate_.allow(source)) co_return std::nullopt;
  const auto question = dns::parse_query(query);
  if (!question) co_return std::nullopt;
  const bool allowed = resolves(*policy, question->name);
  record(source, *policy, question->name, allowed);
  if (!allowed) {
    spdlog::debug("dns: {} denied over tcp", question->name);
    co_return framed(dns::error_reply(query, dns::kNxDomain));
  }
  const uint16_t client_id = read_id(query);
  const auto id = random_id();
  if (!id) co_return std::nullopt;
  write16(query, 0, *id);
  for (const udp::endpoint& upstream : upstreams_) {
    std::optional<Bytes> reply = co_await ask_over_tcp(upstream, query, question->end);
    if (!reply) continue;
    write16(*reply, 0, client_id);
    co_return framed(*reply);
  }
  write16(query, 0, client_id);
  co_return framed(dns::error_reply(query, dns::kServFail));
}

net::awaitable<std::optional<Bytes>> DnsForwarder::Impl::ask_over_tcp(const udp::endpoint& upstream,
                                                                      const Bytes& query,
                                                                      size_t question_end) {
  auto connection = std::make_shared<TimedSocket>(tcp::socket(io_));
  boost::system::error_code ec;
  connection->socket.open(tcp::v4(), ec);
  if (ec) co_return std::nullopt;
  close_on_exec(connection->socket.native_handle());
  connection->deadline.expires_after(config_.upstream_timeout);
  net::co_spawn(io_, close_when_late(connection), log_failure);
  const tcp::endpoint address(upstream.address(), upstream.port());
  co_await connection->socket.async_connect(address, net::redirect_error(net::use_awaitable, ec));
  std::optional<Bytes> reply;
  if (!ec) {
    const Bytes request = framed(query);
    co_await net::async_write(connection->socket, net::buffer(request),
                              net::redirect_error(net::use_awaitable, ec));
  }
  if (!ec) reply = co_await read_frame(connection->socket, kMaxUdpMessage);
  finish(*connection);
  if (!reply || read_id(*reply) != read_id(query) || !dns::answers(*reply, query, question_end))
    co_return std::nullopt;
  co_return reply;
}

// ---- DnsForwarder ----------------------------------------------------------

Result<std::unique_ptr<DnsForwarder>> DnsForwarder::start(DnsConfig config, uint16_t port) {
  if (!config.policy_for) return Error::with_message("dns forwarder: no policy_for", kErrBadInput);
  if (config.upstreams.empty()) {
    std::ifstream file(config.resolv_conf);
    std::stringstream text;
    text << file.rdbuf();
    config.upstreams = dns::parse_resolv_conf(text.str());
    if (config.upstreams.empty()) {
      return Error::with_message("dns forwarder: " + config.resolv_conf +
                                     " names no IPv4 nameserver: configure the DNS upstreams",
                                 kErrBadInput);
    }
  }
  auto impl = std::make_unique<Impl>(std::move(config));
  if (Status bound = impl->bind(port); !bound) return bound.error();
  impl->run();
  return std::unique_ptr<DnsForwarder>(new DnsForwarder(std::move(impl)));
}

DnsForwarder::DnsForwarder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnsForwarder::~DnsForwarder() = default;
uint16_t DnsForwarder::port() const { return impl_->port(); }

}  // namespace abx::egress
