// The egress proxy over loopback: connections handed to it through serve()
// as if a sandbox at 127.0.0.1 had dialled a destination; servers that
// record what reaches them play the internet.
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>

#include "egress/proxy.h"
#include "egress_test_support.h"
#include "temp_dir.h"

namespace abx::egress {
namespace {

using testing::connect_via;
using testing::EchoServer;
using testing::exchange;
using testing::HttpServer;
using testing::kLoopback;
using testing::SocksServer;
using testing::tls_exchange;

constexpr uint32_t kForbidden = 0x7f000002;  // 127.0.0.2: "always denied" in these tests
constexpr const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

std::string get(const std::string& host, const std::string& extra = {}) {
  return "GET / HTTP/1.1\r\nHost: " + host + "\r\n" + extra + "\r\n";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Policy deny_all_but(std::vector<std::string> hosts) {
  Policy p;
  p.deny_cidrs = {kAllTraffic};
  p.allow_hosts = std::move(hosts);
  return p;
}

class EgressProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = CertificateAuthority::open(world_dir_.path());
    ASSERT_TRUE(ca.ok()) << ca.error().message();
    world_ca_ = std::move(*ca);
  }
  ~EgressProxyTest() override { proxy_.reset(); }

  // The "internet"'s CA signs the HTTPS servers' certificates.
  std::shared_ptr<SSL_CTX> world_tls(const std::string& name) {
    return world_ca_->server_context(name);
  }
  std::string world_ca_file() const { return (world_dir_.path() / "ca.pem").string(); }

  void start(std::vector<uint16_t> peek_ports, bool trust_world = true) {
    ProxyConfig config;
    config.policy_for = [this](uint32_t source) -> std::shared_ptr<const Policy> {
      std::lock_guard lock(mutex_);
      return source == kLoopback ? policy_ : nullptr;
    };
    config.always_denied = [](uint32_t ip) { return ip == kForbidden; };
    config.resolves_to = resolves_to_;
    config.secret = [this](uint32_t, const std::string& name, const std::string& host,
                           const std::string&) -> std::optional<std::string> {
      std::lock_guard lock(mutex_);
      secret_hosts_.push_back(host);
      const auto it = secrets_.find(name);
      if (it == secrets_.end()) return std::nullopt;
      return it->second;
    };
    config.ca_dir = dir_.path() / "ca";
    if (trust_world) config.upstream_ca_file = world_ca_file();
    config.peek_ports = std::move(peek_ports);
    config.peek_timeout = std::chrono::milliseconds(300);
    config.handshake_timeout = std::chrono::seconds(3);
    config.lookup_timeout = std::chrono::milliseconds(500);
    config.idle_timeout = std::chrono::seconds(5);
    config.max_per_sandbox = 8;
    auto proxy = EgressProxy::start(std::move(config), 0);
    ASSERT_TRUE(proxy.ok()) << proxy.error().message();
    proxy_ = std::move(*proxy);
  }
  void set_policy(Policy policy) {
    std::lock_guard lock(mutex_);
    policy_ = std::make_shared<const Policy>(std::move(policy));
  }

  abx::testing::TempDir dir_{"abx-egress-test"};
  abx::testing::TempDir world_dir_{"abx-egress-world"};
  std::unique_ptr<CertificateAuthority> world_ca_;
  std::mutex mutex_;
  std::shared_ptr<const Policy> policy_ = std::make_shared<const Policy>();
  std::map<std::string, std::string> secrets_;
  std::vector<std::string> secret_hosts_;  // the host each secret was asked for
  // Every name here is served on 127.0.0.1 ("localhost" too, and only there).
  std::function<bool(const std::string&, uint32_t)> resolves_to_ =
      [](const std::string&, uint32_t ip) { return ip == kLoopback; };
  std::unique_ptr<EgressProxy> proxy_;
};

TEST_F(EgressProxyTest, RelaysBytesBothWaysWhenThePolicyAllows) {
  EchoServer echo;
  start({});
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + i % 26);
  const UniqueFd client = connect_via(*proxy_, echo.port());
  EXPECT_EQ(exchange(client.get(), big), big);
}

TEST(EgressRelay, AWriteToAPeerThatIsGoneIsAnErrorNotASignal) {
  int sandbox[2], world[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sandbox), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, world), 0);
  const UniqueFd sandbox_end(sandbox[0]), client_side(sandbox[1]), upstream_side(world[0]);
  ::close(world[1]);  // the server is gone
  ASSERT_EQ(::write(sandbox_end.get(), "hello", 5), 5);
  PlainStream client(client_side.get()), upstream(upstream_side.get());
  // splice(2) into the dead socket fails with EPIPE, which raises SIGPIPE unless blocked.
  relay(client, upstream, nullptr, nullptr, std::chrono::seconds(2));
  SUCCEED() << "still running";
}

TEST_F(EgressProxyTest, RefusesUnknownSourcesAlwaysDeniedAddressesAndDeniedCidrs) {
  EchoServer echo;
  start({});
  {
    const UniqueFd client = connect_via(*proxy_, echo.port(), kForbidden);
    EXPECT_EQ(exchange(client.get(), "hi"), "");
  }
  Policy p;
  p.deny_cidrs = {Cidr{kLoopback, 32}};
  set_policy(p);
  {
    const UniqueFd client = connect_via(*proxy_, echo.port());
    EXPECT_EQ(exchange(client.get(), "hi"), "");
  }
  set_policy(Policy{});
  {
    std::lock_guard lock(mutex_);
    policy_ = nullptr;  // the source is no sandbox
  }
  const UniqueFd client = connect_via(*proxy_, echo.port());
  EXPECT_EQ(exchange(client.get(), "hi"), "");
  EXPECT_EQ(echo.connections(), 0);
}

TEST_F(EgressProxyTest, DecidesHttpByHostWithAllowDenyAndWildcards) {
  HttpServer http;
  start({http.port()});
  set_policy(deny_all_but({"*.allowed.test", "exact.test"}));
  for (const char* host : {"api.allowed.test", "a.b.allowed.test:8080", "EXACT.test"}) {
    const UniqueFd client = connect_via(*proxy_, http.port());
    EXPECT_EQ(exchange(client.get(), get(host)), kOk) << host;
  }
  for (const char* host : {"allowed.test", "other.test", "exact.test.evil"}) {
    const UniqueFd client = connect_via(*proxy_, http.port());
    EXPECT_EQ(exchange(client.get(), get(host)), "") << host;
  }
  Policy deny;
  deny.deny_hosts = {"blocked.test"};
  set_policy(deny);
  const UniqueFd blocked = connect_via(*proxy_, http.port());
  EXPECT_EQ(exchange(blocked.get(), get("blocked.test")), "");
  const UniqueFd other = connect_via(*proxy_, http.port());
  EXPECT_EQ(exchange(other.get(), get("fine.test")), kOk);
  EXPECT_EQ(http.heads().size(), 4u);
}

TEST_F(EgressProxyTest, DecidesTlsBySniAndDoesNotInterceptHostsWithoutRules) {
  HttpServer https(world_tls("api.allowed.test"));
  start({https.port()});
  set_policy(deny_all_but({"*.allowed.test"}));
  std::string world_pem = world_ca_->pem();
  const UniqueFd client = connect_via(*proxy_, https.port());
  // Trusting only the world's CA: the sandbox talks to the real server, untouched.
  EXPECT_EQ(tls_exchange(client.get(), "api.allowed.test", world_pem, get("api.allowed.test")),
            kOk);
  const UniqueFd denied = connect_via(*proxy_, https.port());
  EXPECT_EQ(tls_exchange(denied.get(), "api.denied.test", world_pem, get("api.denied.test")),
            "handshake failed");
  EXPECT_EQ(https.heads().size(), 1u);
}

TEST_F(EgressProxyTest, SetsRuleHeadersOnPlainHttpRequests) {
  HttpServer http;
  start({http.port()});
  Policy p;
  p.rules = {HostRule{"localhost", {{"X-Team", "blue"}, {"Authorization", "abx-secret:TOKEN"}}}};
  set_policy(p);
  secrets_["TOKEN"] = "Bearer s3cret";
  const UniqueFd client = connect_via(*proxy_, http.port());
  const std::string two = get("localhost", "Authorization: placeholder\r\nx-team: red\r\n") +
                          "POST /b HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello";
  EXPECT_EQ(exchange(client.get(), two), std::string(kOk) + kOk);
  const auto heads = http.heads();
  ASSERT_EQ(heads.size(), 2u);
  for (const std::string& head : heads) {
    EXPECT_TRUE(contains(head, "\r\nAuthorization: Bearer s3cret\r\n")) << head;
    EXPECT_TRUE(contains(head, "\r\nX-Team: blue\r\n")) << head;
    EXPECT_FALSE(contains(head, "placeholder")) << head;
    EXPECT_FALSE(contains(head, "red")) << head;
  }
  // Asked for the host the request goes to, so the store can refuse other hosts.
  std::lock_guard lock(mutex_);
  EXPECT_FALSE(secret_hosts_.empty());
  for (const std::string& host : secret_hosts_) EXPECT_EQ(host, "localhost");
}

TEST_F(EgressProxyTest, ManyRequestsOnOneConnectionWithoutSecretsAreNotCounted) {
  // Only a connection whose rule sends secrets reads its responses (and bounds the requests
  // not yet answered): one without keeps every request it pipelines.
  HttpServer http;
  start({http.port()});
  Policy p;
  p.rules = {HostRule{"localhost", {{"X-Team", "blue"}}}};
  set_policy(p);
  const UniqueFd client = connect_via(*proxy_, http.port());
  std::string requests, answers;
  for (int i = 0; i < 1100; ++i) requests += get("localhost"), answers += kOk;
  EXPECT_EQ(exchange(client.get(), requests), answers);
}

TEST_F(EgressProxyTest, AnUnknownSecretFailsTheRequestAndNothingIsForwarded) {
  HttpServer http;
  start({http.port()});
  Policy p;
  p.rules = {HostRule{"localhost", {{"Authorization", "abx-secret:MISSING"}}}};
  set_policy(p);
  const UniqueFd client = connect_via(*proxy_, http.port());
  const std::string answer = exchange(client.get(), get("localhost"));
  EXPECT_TRUE(contains(answer, "HTTP/1.1 502 ")) << answer;
  EXPECT_TRUE(http.heads().empty());
}

TEST_F(EgressProxyTest, PlainHttpSecretsOnlyGoToAnAddressOfTheName) {
  constexpr uint32_t kElsewhere = 0x7f000003;  // not what "localhost" resolves to
  HttpServer http(nullptr, kElsewhere);
  start({http.port()});
  Policy p;
  p.rules = {HostRule{"localhost", {{"Authorization", "abx-secret:TOKEN"}}}};
  set_policy(p);
  secrets_["TOKEN"] = "s3cret";
  // The sandbox dialled its own server with the rule host's name: no secret for it.
  const UniqueFd client = connect_via(*proxy_, http.port(), kElsewhere);
  const std::string answer = exchange(client.get(), get("localhost"));
  EXPECT_TRUE(contains(answer, "HTTP/1.1 502 ")) << answer;
  EXPECT_TRUE(http.heads().empty());
}

// The host's resolver, as seen from a lookup: it answers nothing until opened.
class SilentResolver {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    opened_cv_.wait(lock, [this] { return opened_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    opened_ = true;
    opened_cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_cv_;
  bool opened_ = false;
};

TEST_F(EgressProxyTest, ALookupThatNeverAnswersFailsTheRequestInsteadOfHanging) {
  HttpServer http;
  auto resolver = std::make_shared<SilentResolver>();
  resolves_to_ = [resolver](const std::string& name, uint32_t ip) {
    if (name == "silent.test") resolver->wait();
    return ip == kLoopback;
  };
  start({http.port()});
  Policy p;
  p.rules = {HostRule{"silent.test", {{"Authorization", "abx-secret:TOKEN"}}}};
  set_policy(p);
  secrets_["TOKEN"] = "s3cret";
  // Plain HTTP: the secret goes only to an address of the name, which it asks the resolver.
  const UniqueFd client = connect_via(*proxy_, http.port());
  const std::string answer = exchange(client.get(), get("silent.test"));
  resolver->open();  // so that no lookup outlives the test
  EXPECT_TRUE(contains(answer, "HTTP/1.1 502 "))
      << "no answer before the client gave up: " << answer;
  EXPECT_TRUE(http.heads().empty());
}

TEST_F(EgressProxyTest, InterceptsTlsOnlyForRuleHostsAndSetsHeaders) {
  HttpServer https(world_tls("api.rules.test"));
  start({https.port()});
  Policy p;
  p.rules = {HostRule{"api.rules.test", {{"X-Api-Key", "abx-secret:KEY"}}}};
  set_policy(p);
  secrets_["KEY"] = "sk-live-123";
  const UniqueFd client = connect_via(*proxy_, https.port());
  // The sandbox trusts the proxy's CA (and only it): the leaf was minted for the name.
  const std::string answer = tls_exchange(client.get(), "api.rules.test", proxy_->ca_pem(),
                                          get("api.rules.test", "X-Api-Key: placeholder\r\n"));
  EXPECT_EQ(answer, kOk);
  const auto heads = https.heads();
  ASSERT_EQ(heads.size(), 1u);
  EXPECT_TRUE(contains(heads[0], "\r\nX-Api-Key: sk-live-123\r\n")) << heads[0];
  EXPECT_FALSE(contains(heads[0], "placeholder"));
  // The CA is kept: a second proxy on the same dir presents the same one.
  const std::string pem = proxy_->ca_pem();
  proxy_.reset();
  start({https.port()});
  EXPECT_EQ(proxy_->ca_pem(), pem);
}

TEST_F(EgressProxyTest, AnUntrustedUpstreamCertificateFailsTheConnection) {
  HttpServer https(world_tls("api.rules.test"));
  start({https.port()}, /*trust_world=*/false);
  Policy p;
  p.rules = {HostRule{"api.rules.test", {{"X-Api-Key", "abx-secret:KEY"}}}};
  set_policy(p);
  secrets_["KEY"] = "sk-live-123";
  const UniqueFd client = connect_via(*proxy_, https.port());
  EXPECT_EQ(tls_exchange(client.get(), "api.rules.test", proxy_->ca_pem(), get("api.rules.test")),
            "handshake failed");
  EXPECT_TRUE(https.heads().empty());
}

TEST_F(EgressProxyTest, TunnelsThroughSocks5WithAndWithoutAuthentication) {
  EchoServer echo;
  start({});
  for (const bool with_password : {false, true}) {
    SocksServer socks(with_password ? "user" : "", with_password ? "pass" : "");
    Policy p;
    p.egress_proxy = SocksProxy{"127.0.0.1",
                                socks.port(),
                                with_password ? "user" : "",
                                with_password ? "pass" : "",
                                false,
                                {},
                                {}};
    set_policy(p);
    const UniqueFd client = connect_via(*proxy_, echo.port());
    EXPECT_EQ(exchange(client.get(), "through socks"), "through socks");
    EXPECT_EQ(socks.targets(), std::vector<uint16_t>{echo.port()});
  }
  EXPECT_EQ(echo.connections(), 2);
}

TEST_F(EgressProxyTest, TunnelsThroughSocks5OverVerifiedTlsEvenIntercepted) {
  HttpServer https(world_tls("api.rules.test"));
  SocksServer socks("user", "pass", world_tls("socks.test"));
  start({https.port()});
  Policy p;
  p.egress_proxy =
      SocksProxy{"127.0.0.1", socks.port(), "user", "pass", true, "socks.test", world_ca_->pem()};
  p.rules = {HostRule{"api.rules.test", {{"X-Api-Key", "abx-secret:KEY"}}}};
  set_policy(p);
  secrets_["KEY"] = "sk-live-123";
  // TLS to the sandbox, TLS to the real host inside TLS to the SOCKS proxy.
  const UniqueFd client = connect_via(*proxy_, https.port());
  EXPECT_EQ(tls_exchange(client.get(), "api.rules.test", proxy_->ca_pem(), get("api.rules.test")),
            kOk);
  ASSERT_EQ(https.heads().size(), 1u);
  EXPECT_TRUE(contains(https.heads()[0], "\r\nX-Api-Key: sk-live-123\r\n"));
  // A SOCKS proxy whose certificate is not for the name it was given: fail closed.
  p.egress_proxy->tls_server_name = "other.test";
  set_policy(p);
  const UniqueFd refused = connect_via(*proxy_, https.port());
  EXPECT_EQ(tls_exchange(refused.get(), "api.rules.test", proxy_->ca_pem(), get("api.rules.test")),
            "handshake failed");
  EXPECT_EQ(https.heads().size(), 1u);
}

TEST_F(EgressProxyTest, StoppingCutsLiveConnectionsAndRefusesUnredirectedOnes) {
  EchoServer echo;
  start({});
  // Dialled straight at the listener: no SO_ORIGINAL_DST (no NAT), refused.
  UniqueFd direct(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in listener = testing::address_of(kLoopback, proxy_->port());
  ASSERT_EQ(::connect(direct.get(), reinterpret_cast<const sockaddr*>(&listener), sizeof listener),
            0);
  testing::make_nonblocking(direct.get());
  EXPECT_EQ(exchange(direct.get(), "hi"), "");
  const UniqueFd client = connect_via(*proxy_, echo.port());
  PlainStream stream(client.get());
  char buffer[2];
  ASSERT_TRUE(write_all(stream, "hi", Clock::now() + testing::kWait));
  ASSERT_TRUE(read_exact(stream, buffer, 2, Clock::now() + testing::kWait));
  proxy_.reset();  // joins every thread: returns only once the connection is cut
  EXPECT_EQ(testing::read_all(stream, Clock::now() + testing::kWait), "");
}

TEST_F(EgressProxyTest, FailsClosedWhenTheSocksProxyIsDownRefusesOrIsDenied) {
  EchoServer echo;
  start({});
  uint16_t dead_port = 0;
  { const UniqueFd gone = testing::listen_on(kLoopback, dead_port); }
  SocksServer wrong_password("user", "right");
  const std::vector<SocksProxy> broken = {
      {"127.0.0.1", dead_port, "", "", false, {}, {}},
      {"127.0.0.1", wrong_password.port(), "user", "wrong", false, {}, {}},
      {"127.0.0.2", wrong_password.port(), "", "", false, {}, {}},  // always denied
      {"127.0.0.1", echo.port(), "", "", false, {}, {}},            // not a SOCKS server
  };
  for (const SocksProxy& socks : broken) {
    Policy p;
    p.egress_proxy = socks;
    set_policy(p);
    const UniqueFd client = connect_via(*proxy_, echo.port());
    EXPECT_EQ(exchange(client.get(), "hi"), "") << socks.port;
  }
  EXPECT_EQ(echo.connections(), 1);  // only the one playing a SOCKS server
}

TEST_F(EgressProxyTest, APolicyChangeCutsConnectionsItForbids) {
  EchoServer echo;
  start({});
  const UniqueFd client = connect_via(*proxy_, echo.port());
  PlainStream stream(client.get());
  const auto deadline = Clock::now() + testing::kWait;
  char buffer[4];
  ASSERT_TRUE(write_all(stream, "ping", deadline));
  ASSERT_TRUE(read_exact(stream, buffer, 4, deadline));
  Policy p;
  p.deny_cidrs = {kAllTraffic};
  p.allow_cidrs = {Cidr{kLoopback, 32}};
  set_policy(p);
  proxy_->policy_changed(kLoopback);  // still allowed: the connection goes on
  ASSERT_TRUE(write_all(stream, "pong", deadline));
  ASSERT_TRUE(read_exact(stream, buffer, 4, deadline));
  EXPECT_EQ(std::string(buffer, 4), "pong");
  p.allow_cidrs.clear();
  set_policy(p);
  proxy_->policy_changed(kLoopback);
  EXPECT_EQ(testing::read_all(stream, deadline), "");
  EXPECT_FALSE(write_all(stream, std::string(8 << 20, 'x'), deadline));
}

TEST_F(EgressProxyTest, APolicyChangeCutsNamedConnectionsWhoseNameOrRulesChanged) {
  HttpServer https(world_tls("api.allowed.test"));
  start({https.port()});
  Policy p = deny_all_but({"*.allowed.test"});
  set_policy(p);
  const UniqueFd client = connect_via(*proxy_, https.port());
  auto context = client_context_trusting(world_ca_->pem());
  ASSERT_TRUE(context.ok());
  SSL* ssl = SSL_new(context->get());
  SSL_set_tlsext_host_name(ssl, "api.allowed.test");
  SSL_set_connect_state(ssl);
  PlainStream plain(client.get());
  TlsStream tls(ssl, plain);
  const auto deadline = Clock::now() + testing::kWait;
  ASSERT_TRUE(tls.handshake(deadline).ok());
  const auto request = [&] {
    char answer[std::char_traits<char>::length(kOk)];
    return write_all(tls, get("api.allowed.test"), deadline) &&
           read_exact(tls, answer, sizeof answer, deadline);
  };
  ASSERT_TRUE(request());
  p.deny_hosts = {"other.test"};  // changes nothing for this connection
  set_policy(p);
  proxy_->policy_changed(kLoopback);
  ASSERT_TRUE(request());
  p.rules = {HostRule{"api.allowed.test", {{"X-A", "b"}}}};  // now it would be intercepted
  set_policy(p);
  proxy_->policy_changed(kLoopback);
  EXPECT_EQ(testing::read_all(tls, deadline), "");
  EXPECT_EQ(https.heads().size(), 2u);
}

TEST_F(EgressProxyTest, HostileInputIsBoundedAndNeverStopsTheProxy) {
  HttpServer http;
  start({http.port()});
  set_policy(deny_all_but({"ok.test"}));
  std::mt19937 random(7);
  for (int i = 0; i < 20; ++i) {  // garbage that looks like a TLS record
    std::string hello = "\x16\x03\x01";
    const size_t size = random() % 600;
    hello += static_cast<char>(size >> 8);
    hello += static_cast<char>(size);
    for (size_t j = 0; j < size; ++j) hello += static_cast<char>(random());
    const UniqueFd client = connect_via(*proxy_, http.port());
    EXPECT_EQ(exchange(client.get(), hello), "");  // no name: denied by the policy
  }
  // A head without end, and a slowloris that never finishes its Host line.
  const UniqueFd huge = connect_via(*proxy_, http.port());
  EXPECT_EQ(exchange(huge.get(), "GET / HTTP/1.1\r\nX: " + std::string(200000, 'a')), "");
  const UniqueFd slow = connect_via(*proxy_, http.port());
  PlainStream slow_stream(slow.get());
  ASSERT_TRUE(
      write_all(slow_stream, "GET / HTTP/1.1\r\nHost: ok.te", Clock::now() + testing::kWait));
  EXPECT_EQ(testing::read_all(slow_stream, Clock::now() + testing::kWait), "");
  // A rule host with a head over 64 KiB gets 431, and the proxy still serves.
  Policy rules = deny_all_but({"localhost"});
  rules.rules = {HostRule{"localhost", {{"X-A", "b"}}}};
  set_policy(rules);
  const UniqueFd big = connect_via(*proxy_, http.port());
  const std::string first_line = get("localhost");
  const std::string answer = exchange(
      big.get(), first_line.substr(0, first_line.size() - 2) + "X: " + std::string(70000, 'a'));
  EXPECT_TRUE(contains(answer, " 431 ")) << answer.substr(0, 100);
  const UniqueFd after = connect_via(*proxy_, http.port());
  EXPECT_EQ(exchange(after.get(), get("localhost")), kOk);
}

TEST_F(EgressProxyTest, RefusesConnectionsBeyondThePerSandboxLimit) {
  EchoServer echo;
  start({});
  std::vector<UniqueFd> open;
  for (int i = 0; i < 8; ++i) open.push_back(connect_via(*proxy_, echo.port()));
  for (const UniqueFd& fd : open) {  // all eight relay
    PlainStream s(fd.get());
    char c = 0;
    ASSERT_TRUE(write_all(s, "x", Clock::now() + testing::kWait));
    ASSERT_TRUE(read_exact(s, &c, 1, Clock::now() + testing::kWait));
  }
  const UniqueFd ninth = connect_via(*proxy_, echo.port());
  EXPECT_EQ(exchange(ninth.get(), "x"), "");
}

}  // namespace
}  // namespace abx::egress
