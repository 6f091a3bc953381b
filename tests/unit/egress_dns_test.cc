// The DNS forwarder against a fake upstream on 127.0.0.1: policy verdicts,
// ID rewriting, spoofed replies, hostile packets, timeouts, TCP framing.
// Clients on 127.0.0.1 are the sandbox with a policy; 127.0.0.2 is no sandbox.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "common/unique_fd.h"
#include "egress/dns_forwarder.h"
#include "temp_dir.h"

namespace abx::egress {
namespace {

using Bytes = std::vector<uint8_t>;
using namespace std::chrono_literals;

constexpr uint32_t kSandboxIp = 0x7f000001;  // 127.0.0.1
constexpr uint32_t kStrangerIp = 0x7f000002;
constexpr uint8_t kRealAnswer[4] = {93, 184, 216, 34};
constexpr uint8_t kSpoofedAnswer[4] = {6, 6, 6, 6};
constexpr int kWaitMs = 5000;  // for replies that must come; never reached when all is well

Bytes query_packet(uint16_t id, std::string_view name, uint16_t qdcount = 1) {
  Bytes p = {
      static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0};
  p[4] = static_cast<uint8_t>(qdcount >> 8);
  p[5] = static_cast<uint8_t>(qdcount);
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    p.push_back(static_cast<uint8_t>(dot - start));
    p.insert(p.end(), name.begin() + static_cast<ptrdiff_t>(start),
             name.begin() + static_cast<ptrdiff_t>(dot));
    start = dot + 1;
  }
  p.insert(p.end(), {0, 0, 1, 0, 1});  // root, QTYPE A, QCLASS IN
  return p;
}

uint16_t id_of(const Bytes& p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint8_t rcode_of(const Bytes& p) { return p[3] & 0x0f; }
Bytes last4(const Bytes& p) { return Bytes(p.end() - 4, p.end()); }
Bytes bytes_of(const uint8_t (&a)[4]) { return Bytes(a, a + 4); }

// A reply with one A record `address` to the query `q`, with ID `id`.
Bytes a_reply(const Bytes& q, uint16_t id, const uint8_t (&address)[4]) {
  Bytes r = q;
  r[0] = static_cast<uint8_t>(id >> 8);
  r[1] = static_cast<uint8_t>(id);
  r[2] = 0x81;
  r[3] = 0x80;
  r[7] = 1;                                                        // ANCOUNT
  r.insert(r.end(), {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4});  // name→question, A, IN, TTL, len
  r.insert(r.end(), address, address + 4);
  return r;
}

sockaddr_in loopback(uint32_t ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip);
  a.sin_port = htons(port);
  return a;
}

UniqueFd bound_socket(int type, uint32_t ip) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  const sockaddr_in a = loopback(ip, 0);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  return fd;
}

uint16_t port_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

std::optional<Bytes> receive(int fd, int timeout_ms = kWaitMs) {
  if (!readable(fd, timeout_ms)) return std::nullopt;
  Bytes buffer(65536);
  const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
  if (n < 0) return std::nullopt;
  buffer.resize(static_cast<size_t>(n));
  return buffer;
}

bool read_all(int fd, uint8_t* out, size_t size) {
  while (size > 0) {
    if (!readable(fd, kWaitMs)) return false;
    const ssize_t n = ::recv(fd, out, size, 0);
    if (n <= 0) return false;
    out += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::optional<Bytes> read_frame(int fd) {
  uint8_t prefix[2];
  if (!read_all(fd, prefix, 2)) return std::nullopt;
  Bytes message(static_cast<size_t>(prefix[0] << 8 | prefix[1]));
  if (!read_all(fd, message.data(), message.size())) return std::nullopt;
  return message;
}

void send_frame(int fd, const Bytes& message) {
  Bytes out = {static_cast<uint8_t>(message.size() >> 8), static_cast<uint8_t>(message.size())};
  out.insert(out.end(), message.begin(), message.end());
  ASSERT_EQ(::send(fd, out.data(), out.size(), MSG_NOSIGNAL), static_cast<ssize_t>(out.size()));
}

// Whether the peer closed the connection (EOF or reset) within the wait.
bool closed_by_peer(int fd) {
  uint8_t byte;
  return readable(fd, kWaitMs) && ::recv(fd, &byte, 1, 0) <= 0;
}

// An upstream DNS server answering every A query with 93.184.216.34, over UDP
// and TCP on the same port; or silent; or preceding its answer with replies a
// spoofer would send (a wrong ID, the right ID from another port).
class FakeUpstream {
 public:
  enum class Mode { kAnswer, kSilent, kSpoofFirst, kSpoofOnly };
  explicit FakeUpstream(Mode mode) : mode_(mode) {
    // The port the kernel picks for UDP may be taken for TCP (by an earlier test): retry.
    for (int attempt = 0; attempt < 16 && !tcp_.valid(); ++attempt) {
      udp_ = bound_socket(SOCK_DGRAM, kSandboxIp);
      UniqueFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      const int on = 1;
      ::setsockopt(tcp.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
      const sockaddr_in a = loopback(kSandboxIp, port_of(udp_.get()));
      if (::bind(tcp.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0)
        tcp_ = std::move(tcp);
    }
    EXPECT_TRUE(tcp_.valid());
    EXPECT_EQ(::listen(tcp_.get(), 16), 0);
    spoofer_ = bound_socket(SOCK_DGRAM, kSandboxIp);
    int pipe_fds[2];
    EXPECT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    stop_read_ = UniqueFd(pipe_fds[0]);
    stop_write_ = UniqueFd(pipe_fds[1]);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeUpstream() {
    EXPECT_EQ(::write(stop_write_.get(), "x", 1), 1);
    thread_.join();
  }
  sockaddr_in address() const { return loopback(kSandboxIp, port_of(udp_.get())); }
  int queries() const { return queries_; }
  uint16_t last_id() const { return last_id_; }

 private:
  void serve() {
    for (;;) {
      pollfd p[3] = {
          {udp_.get(), POLLIN, 0}, {tcp_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
      if (::poll(p, 3, -1) < 0) continue;
      if (p[2].revents) return;
      if (p[0].revents) answer_udp();
      if (p[1].revents) answer_tcp();
    }
  }

  void answer_udp() {
    Bytes q(65536);
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(udp_.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 12) return;
    q.resize(static_cast<size_t>(n));
    ++queries_;
    last_id_ = id_of(q);
    if (mode_ == Mode::kSilent) return;
    auto send = [&](int fd, const Bytes& r) {
      ::sendto(fd, r.data(), r.size(), 0, reinterpret_cast<const sockaddr*>(&from), sizeof from);
    };
    if (mode_ == Mode::kSpoofFirst || mode_ == Mode::kSpoofOnly) {
      send(udp_.get(), a_reply(q, static_cast<uint16_t>(id_of(q) ^ 0x5a5a), kSpoofedAnswer));
      send(spoofer_.get(), a_reply(q, id_of(q), kSpoofedAnswer));
      Bytes other_question = a_reply(q, id_of(q), kSpoofedAnswer);
      other_question[13] ^= 0x01;  // a different first letter
      send(udp_.get(), other_question);
    }
    if (mode_ != Mode::kSpoofOnly) send(udp_.get(), a_reply(q, id_of(q), kRealAnswer));
  }

  void answer_tcp() {
    UniqueFd connection(::accept4(tcp_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection.valid()) return;
    const std::optional<Bytes> q = read_frame(connection.get());
    if (!q || q->size() < 12) return;
    ++queries_;
    if (mode_ == Mode::kSilent) {
      held_.push_back(std::move(connection));  // open and mute: the forwarder must time out
      return;
    }
    send_frame(connection.get(), a_reply(*q, id_of(*q), kRealAnswer));
  }

  Mode mode_;
  UniqueFd udp_, spoofer_, tcp_, stop_read_, stop_write_;
  std::vector<UniqueFd> held_;
  std::atomic<int> queries_{0};
  std::atomic<uint16_t> last_id_{0};
  std::thread thread_;
};

struct Forwarder {
  explicit Forwarder(Policy policy, std::vector<sockaddr_in> upstreams, DnsConfig config = {}) {
    auto shared = std::make_shared<const Policy>(std::move(policy));
    config.policy_for = [shared, this](uint32_t ip) -> std::shared_ptr<const Policy> {
      std::lock_guard lock(mutex);
      sources_seen.push_back(ip);
      return ip == kSandboxIp ? shared : nullptr;
    };
    config.upstreams = std::move(upstreams);
    auto started = DnsForwarder::start(std::move(config), 0);
    EXPECT_TRUE(started.ok()) << started.error().message();
    if (started) forwarder = std::move(started.value());
  }
  sockaddr_in address() const { return loopback(kSandboxIp, forwarder->port()); }

  // A UDP client on `ip` that has sent `query` to the forwarder.
  UniqueFd send_udp(const Bytes& query, uint32_t ip = kSandboxIp) const {
    UniqueFd fd = bound_socket(SOCK_DGRAM, ip);
    send_udp(fd.get(), query);
    return fd;
  }
  void send_udp(int fd, const Bytes& query) const {
    const sockaddr_in to = address();
    EXPECT_EQ(::sendto(fd, query.data(), query.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                       sizeof to),
              static_cast<ssize_t>(query.size()));
  }
  UniqueFd connect_tcp(uint32_t ip = kSandboxIp) const {
    UniqueFd fd = bound_socket(SOCK_STREAM, ip);
    const sockaddr_in to = address();
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
    return fd;
  }
  bool saw(uint32_t ip) {
    std::lock_guard lock(mutex);
    return std::find(sources_seen.begin(), sources_seen.end(), ip) != sources_seen.end();
  }

  std::mutex mutex;
  std::vector<uint32_t> sources_seen;
  std::unique_ptr<DnsForwarder> forwarder;
};

Policy deny_hosts(std::vector<std::string> hosts) {
  Policy p;
  p.deny_hosts = std::move(hosts);
  return p;
}

// ---- the parser ------------------------------------------------------------

TEST(DnsParse, QueryNameIsLowerCaseAndDotted) {
  EXPECT_EQ(dns::query_name(query_packet(1, "WWW.Example.COM")), "www.example.com");
  const auto question = dns::parse_query(query_packet(1, "a.b"));
  ASSERT_TRUE(question);
  EXPECT_EQ(question->type, 1);
  EXPECT_EQ(question->end, 12u + 5u + 4u);
  EXPECT_EQ(dns::query_name(query_packet(1, "")), "");  // the root
}

TEST(DnsParse, RejectsWhatIsNotOnePlainQuestion) {
  EXPECT_FALSE(dns::parse_query(query_packet(1, "a.b", 0)));
  EXPECT_FALSE(dns::parse_query(query_packet(1, "a.b", 2)));
  Bytes response = query_packet(1, "a.b");
  response[2] |= 0x80;
  EXPECT_FALSE(dns::parse_query(response));
  Bytes notify = query_packet(1, "a.b");
  notify[2] |= 4 << 3;  // opcode NOTIFY
  EXPECT_FALSE(dns::parse_query(notify));
  Bytes pointer_loop = query_packet(1, "");
  pointer_loop.insert(pointer_loop.begin() + 12, {0xc0, 0x0c});
  EXPECT_FALSE(dns::parse_query(pointer_loop));
  EXPECT_FALSE(dns::parse_query(query_packet(1, std::string(64, 'a') + ".b")));
  EXPECT_TRUE(dns::parse_query(query_packet(1, std::string(63, 'a') + ".b")));
  std::string long_name;
  for (int i = 0; i < 4; ++i) long_name += std::string(63, 'a') + ".";
  long_name.pop_back();  // 4 labels of 63: 257 bytes on the wire
  EXPECT_FALSE(dns::parse_query(query_packet(1, long_name)));
  Bytes dotted = query_packet(1, "ab.c");
  dotted[14] = '.';  // "a.b" as one label would pass for another name
  EXPECT_FALSE(dns::parse_query(dotted));
  Bytes control = query_packet(1, "ab.c");
  control[14] = '\n';
  EXPECT_FALSE(dns::parse_query(control));
}

TEST(DnsParse, RejectsEveryTruncation) {
  const Bytes full = query_packet(7, "www.example.com");
  for (size_t size = 0; size < full.size(); ++size)
    EXPECT_FALSE(dns::parse_query(std::span(full.data(), size))) << size;
}

TEST(DnsParse, SurvivesRandomPackets) {
  std::mt19937 random(42);
  for (int i = 0; i < 20000; ++i) {
    Bytes p(random() % 64);
    for (uint8_t& b : p) b = static_cast<uint8_t>(random());
    if (p.size() >= 6 && i % 2 == 0) {  // mostly plausible headers
      p[2] = 0;
      p[4] = 0;
      p[5] = 1;
    }
    if (const auto q = dns::parse_query(p)) {
      EXPECT_LE(q->end, p.size());
    }
    (void)dns::error_reply(p, dns::kRefused);
  }
}

TEST(DnsParse, ErrorReplyEchoesTheQuestionOnly) {
  Bytes query = query_packet(0xbeef, "x.test");
  query[11] = 1;  // an EDNS OPT record follows the question
  query.insert(query.end(), {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0});
  const Bytes reply = dns::error_reply(query, dns::kNxDomain);
  ASSERT_EQ(reply.size(), query.size() - 11);
  EXPECT_EQ(id_of(reply), 0xbeef);
  EXPECT_EQ(reply[2], 0x81);  // QR, RD copied
  EXPECT_EQ(reply[3], 0x83);  // RA, NXDOMAIN
  EXPECT_EQ(Bytes(reply.begin() + 4, reply.begin() + 12), (Bytes{0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(std::equal(reply.begin() + 12, reply.end(), query.begin() + 12));
  EXPECT_TRUE(dns::error_reply(query_packet(1, "a", 2), dns::kNxDomain).empty());
}

TEST(DnsParse, AnswersMatchesTheQuestionWithoutRegardToCase) {
  const Bytes query = query_packet(1, "Www.Example.com");
  const size_t end = dns::parse_query(query)->end;
  EXPECT_TRUE(
      dns::answers(a_reply(query_packet(9, "www.EXAMPLE.com"), 9, kRealAnswer), query, end));
  EXPECT_FALSE(
      dns::answers(a_reply(query_packet(9, "www.example.org"), 9, kRealAnswer), query, end));
  EXPECT_FALSE(dns::answers(query, query, end));  // not a response
  Bytes other_type = a_reply(query, 1, kRealAnswer);
  other_type[end - 3] = 28;  // AAAA
  EXPECT_FALSE(dns::answers(other_type, query, end));
}

TEST(DnsParse, ResolvConfNameserversIpv4Only) {
  const auto servers = dns::parse_resolv_conf(
      "# comment\nsearch example.com\nnameserver 127.0.0.53\nnameserver ::1\n"
      "nameserver   10.0.0.2 \noptions edns0\n");
  ASSERT_EQ(servers.size(), 2u);
  EXPECT_EQ(ntohl(servers[0].sin_addr.s_addr), 0x7f000035u);
  EXPECT_EQ(ntohs(servers[0].sin_port), 53);
  EXPECT_EQ(ntohl(servers[1].sin_addr.s_addr), 0x0a000002u);
}

TEST(DnsForwarderStart, NeedsAnUpstream) {
  testing::TempDir dir("abx-dns-test");
  std::ofstream(dir.path() / "resolv.conf") << "nameserver ::1\n";
  DnsConfig config;
  config.policy_for = [](uint32_t) { return std::make_shared<const Policy>(); };
  config.resolv_conf = (dir.path() / "resolv.conf").string();
  const auto started = DnsForwarder::start(std::move(config), 0);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().message().find("no IPv4 nameserver"), std::string::npos);
}

TEST(DnsForwarderStart, SaysWhichPortIsTaken) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  const UniqueFd taken(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const sockaddr_in any = loopback(INADDR_ANY, 0);
  ASSERT_EQ(::bind(taken.get(), reinterpret_cast<const sockaddr*>(&any), sizeof any), 0);
  DnsConfig config;
  config.policy_for = [](uint32_t) { return std::make_shared<const Policy>(); };
  config.upstreams = {upstream.address()};
  const uint16_t port = port_of(taken.get());
  const auto started = DnsForwarder::start(std::move(config), port);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().message().find("bind udp port " + std::to_string(port)),
            std::string::npos);
}

// ---- the forwarder over UDP ----------------------------------------------------

TEST(DnsForwarder, RelaysAnAllowedAnswerWithTheClientsId) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()});
  std::set<uint16_t> upstream_ids;
  for (int i = 0; i < 3; ++i) {
    const uint16_t id = 0x1234;
    const UniqueFd client = f.send_udp(query_packet(id, "good.test"));
    const auto reply = receive(client.get());
    ASSERT_TRUE(reply);
    EXPECT_EQ(id_of(*reply), id);
    EXPECT_EQ(rcode_of(*reply), 0);
    EXPECT_EQ(last4(*reply), bytes_of(kRealAnswer));
    upstream_ids.insert(upstream.last_id());
  }
  EXPECT_GT(upstream_ids.size(), 1u);  // fresh random IDs, not the client's (1 in 2^32 to fail)
}

TEST(DnsForwarder, DeniedHostGetsNxdomainWithoutAskingUpstream) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(deny_hosts({"*.evil.test", "evil.test"}), {upstream.address()});
  for (const char* name : {"evil.test", "a.b.EVIL.test"}) {
    const Bytes query = query_packet(77, name);
    const UniqueFd client = f.send_udp(query);
    const auto reply = receive(client.get());
    ASSERT_TRUE(reply) << name;
    EXPECT_EQ(id_of(*reply), 77);
    EXPECT_EQ(rcode_of(*reply), dns::kNxDomain);
    EXPECT_TRUE(std::equal(reply->begin() + 12, reply->end(), query.begin() + 12));
  }
  EXPECT_EQ(upstream.queries(), 0);
}

TEST(DnsForwarder, DenyAllResolvesOnlyAllowedHosts) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Policy policy;
  policy.deny_cidrs = {kAllTraffic};
  policy.allow_hosts = {"allowed.test"};
  Forwarder f(policy, {upstream.address()});
  const UniqueFd denied = f.send_udp(query_packet(1, "other.test"));
  const auto nx = receive(denied.get());
  ASSERT_TRUE(nx);
  EXPECT_EQ(rcode_of(*nx), dns::kNxDomain);
  const UniqueFd allowed = f.send_udp(query_packet(2, "allowed.test"));
  const auto answer = receive(allowed.get());
  ASSERT_TRUE(answer);
  EXPECT_EQ(rcode_of(*answer), 0);
  EXPECT_EQ(last4(*answer), bytes_of(kRealAnswer));
}

TEST(DnsForwarder, UnknownSourceGetsNoAnswer) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(Policy{}, {upstream.address()});
  const UniqueFd stranger = f.send_udp(query_packet(1, "good.test"), kStrangerIp);
  // One socket, read in order: once the sandbox's later query is answered,
  // the stranger's has been handled.
  const UniqueFd sandbox = f.send_udp(query_packet(2, "good.test"));
  ASSERT_TRUE(receive(sandbox.get()));
  EXPECT_TRUE(f.saw(kStrangerIp));
  EXPECT_FALSE(readable(stranger.get(), 0));
  EXPECT_EQ(upstream.queries(), 1);
}

TEST(DnsForwarder, MalformedPacketsGetNoAnswerAndDoNoHarm) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()});
  const UniqueFd client = bound_socket(SOCK_DGRAM, kSandboxIp);
  Bytes pointer_loop = query_packet(1, "");
  pointer_loop.insert(pointer_loop.begin() + 12, {0xc0, 0x0c});
  Bytes response = query_packet(1, "good.test");
  response[2] |= 0x80;
  const Bytes full = query_packet(1, "good.test");
  const std::vector<Bytes> bad = {
      {},
      Bytes(full.begin(), full.begin() + 5),
      Bytes(full.begin(), full.end() - 1),
      pointer_loop,
      query_packet(1, "good.test", 0),
      query_packet(1, "good.test", 2),
      query_packet(1, std::string(64, 'a')),
      response,
      Bytes(5000, 0),
  };
  for (const Bytes& packet : bad) f.send_udp(client.get(), packet);
  f.send_udp(client.get(), query_packet(99, "evil.test"));
  const auto reply = receive(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(id_of(*reply), 99);  // the first answer is to the one good query
  EXPECT_EQ(rcode_of(*reply), dns::kNxDomain);
  EXPECT_EQ(upstream.queries(), 0);
}

TEST(DnsForwarder, SilentUpstreamMeansServfailAfterTheTimeout) {
  FakeUpstream upstream(FakeUpstream::Mode::kSilent);
  DnsConfig config;
  config.upstream_timeout = 100ms;
  Forwarder f(Policy{}, {upstream.address()}, config);
  const UniqueFd client = f.send_udp(query_packet(0x4242, "good.test"));
  const auto reply = receive(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(id_of(*reply), 0x4242);
  EXPECT_EQ(rcode_of(*reply), dns::kServFail);
  EXPECT_EQ(upstream.queries(), 1);
}

TEST(DnsForwarder, SilentUpstreamIsFollowedByTheNext) {
  FakeUpstream silent(FakeUpstream::Mode::kSilent);
  FakeUpstream answering(FakeUpstream::Mode::kAnswer);
  DnsConfig config;
  config.upstream_timeout = 100ms;
  Forwarder f(Policy{}, {silent.address(), answering.address()}, config);
  const UniqueFd client = f.send_udp(query_packet(5, "good.test"));
  const auto reply = receive(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(id_of(*reply), 5);
  EXPECT_EQ(last4(*reply), bytes_of(kRealAnswer));
}

TEST(DnsForwarder, SpoofedRepliesAreIgnored) {
  FakeUpstream upstream(FakeUpstream::Mode::kSpoofFirst);
  Forwarder f(Policy{}, {upstream.address()});
  const UniqueFd client = f.send_udp(query_packet(5, "good.test"));
  const auto reply = receive(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(id_of(*reply), 5);
  EXPECT_EQ(last4(*reply), bytes_of(kRealAnswer));
}

TEST(DnsForwarder, OnlySpoofedRepliesMeanServfail) {
  FakeUpstream upstream(FakeUpstream::Mode::kSpoofOnly);
  DnsConfig config;
  config.upstream_timeout = 200ms;
  Forwarder f(Policy{}, {upstream.address()}, config);
  const UniqueFd client = f.send_udp(query_packet(5, "good.test"));
  const auto reply = receive(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(rcode_of(*reply), dns::kServFail);
}

TEST(DnsForwarder, PendingQueriesAreBoundedPerSource) {
  FakeUpstream upstream(FakeUpstream::Mode::kSilent);
  DnsConfig config;
  config.upstream_timeout = 500ms;  // ample time for the five to arrive first
  config.max_pending_per_source = 2;
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()}, config);
  const UniqueFd client = bound_socket(SOCK_DGRAM, kSandboxIp);
  for (uint16_t id = 1; id <= 5; ++id) f.send_udp(client.get(), query_packet(id, "good.test"));
  std::set<uint16_t> answered;
  for (int i = 0; i < 2; ++i) {
    const auto reply = receive(client.get());
    ASSERT_TRUE(reply);
    EXPECT_EQ(rcode_of(*reply), dns::kServFail);
    answered.insert(id_of(*reply));
  }
  EXPECT_EQ(answered, (std::set<uint16_t>{1, 2}));
  // The three beyond the bound were dropped, not queued: the next reply is to a new query.
  f.send_udp(client.get(), query_packet(6, "evil.test"));
  const auto reply = receive(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(id_of(*reply), 6);
  EXPECT_EQ(upstream.queries(), 2);
}

// ---- the forwarder over TCP ---------------------------------------------------

TEST(DnsForwarder, TcpQueriesAreForwardedOverTcp) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()});
  const UniqueFd client = f.connect_tcp();
  send_frame(client.get(), query_packet(0x0102, "good.test"));
  send_frame(client.get(), query_packet(0x0304, "evil.test"));  // queued behind the first
  const auto answer = read_frame(client.get());
  ASSERT_TRUE(answer);
  EXPECT_EQ(id_of(*answer), 0x0102);
  EXPECT_EQ(last4(*answer), bytes_of(kRealAnswer));
  const auto nx = read_frame(client.get());
  ASSERT_TRUE(nx);
  EXPECT_EQ(id_of(*nx), 0x0304);
  EXPECT_EQ(rcode_of(*nx), dns::kNxDomain);
  EXPECT_EQ(upstream.queries(), 1);
}

TEST(DnsForwarder, TcpSilentUpstreamMeansServfail) {
  FakeUpstream upstream(FakeUpstream::Mode::kSilent);
  DnsConfig config;
  config.upstream_timeout = 100ms;
  Forwarder f(Policy{}, {upstream.address()}, config);
  const UniqueFd client = f.connect_tcp();
  send_frame(client.get(), query_packet(8, "good.test"));
  const auto reply = read_frame(client.get());
  ASSERT_TRUE(reply);
  EXPECT_EQ(id_of(*reply), 8);
  EXPECT_EQ(rcode_of(*reply), dns::kServFail);
}

TEST(DnsForwarder, TcpHugeLengthOrGarbageClosesTheConnection) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()});
  const UniqueFd huge = f.connect_tcp();
  const uint8_t prefix[] = {0xff, 0xff, 0, 0, 0, 0};
  ASSERT_EQ(::send(huge.get(), prefix, sizeof prefix, MSG_NOSIGNAL), 6);
  EXPECT_TRUE(closed_by_peer(huge.get()));
  const UniqueFd garbage = f.connect_tcp();
  send_frame(garbage.get(), query_packet(1, "good.test", 2));
  EXPECT_TRUE(closed_by_peer(garbage.get()));
  const UniqueFd client = f.send_udp(query_packet(3, "evil.test"));
  EXPECT_TRUE(receive(client.get()));  // still serving
}

TEST(DnsForwarder, TcpFromUnknownSourceIsClosed) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  Forwarder f(Policy{}, {upstream.address()});
  const UniqueFd client = f.connect_tcp(kStrangerIp);
  EXPECT_TRUE(closed_by_peer(client.get()));
}

TEST(DnsForwarder, TcpIdleConnectionIsClosed) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  DnsConfig config;
  config.tcp_idle_timeout = 100ms;
  Forwarder f(Policy{}, {upstream.address()}, config);
  const UniqueFd client = f.connect_tcp();
  EXPECT_TRUE(closed_by_peer(client.get()));
}

TEST(DnsForwarder, TcpConnectionsAreBoundedPerSource) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  DnsConfig config;
  config.max_tcp_per_source = 1;
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()}, config);
  const UniqueFd first = f.connect_tcp();
  send_frame(first.get(), query_packet(1, "evil.test"));
  ASSERT_TRUE(read_frame(first.get()));  // accepted and serving
  const UniqueFd second = f.connect_tcp();
  EXPECT_TRUE(closed_by_peer(second.get()));
}

}  // namespace
}  // namespace abx::egress

namespace abx::egress {
namespace {

TEST(DnsForwarder, ASandboxFloodingQueriesIsAnsweredOnlyUpToItsRate) {
  FakeUpstream upstream(FakeUpstream::Mode::kAnswer);
  DnsConfig config;
  config.queries_per_second = 0.001;  // no refill within the test
  config.query_burst = 5;
  Forwarder f(deny_hosts({"evil.test"}), {upstream.address()}, config);
  const UniqueFd client = f.send_udp(query_packet(1, "evil.test"));
  for (uint16_t id = 2; id <= 10; ++id) f.send_udp(client.get(), query_packet(id, "evil.test"));
  int answered = 0;
  while (receive(client.get())) ++answered;
  EXPECT_EQ(answered, 5);
}

}  // namespace
}  // namespace abx::egress
