#include "egress/proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "egress/dial.h"
#include "egress/http_response.h"
#include "egress/http_rewrite.h"
#include "egress/lookup.h"
#include "egress/peek.h"
#include "egress/relay.h"
#include "egress/slots.h"
#include "egress/stream.h"
#include "egress/tls_ca.h"

namespace abx::egress {
namespace {

// The refusal of a connection from no sandbox: nothing to record it in.
constexpr std::string_view kNoSandbox = "no sandbox has this address";

std::string address_text(uint32_t ip) {
  in_addr a{htonl(ip)};
  char buffer[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buffer, sizeof buffer);
  return buffer;
}

bool needs_secret(const HostRule& rule) {
  return std::any_of(rule.headers.begin(), rule.headers.end(), [](const Header& h) {
    return h.value.find(kSecretPrefix) != std::string::npos;
  });
}

// Whether `name` resolves (here, now) to `ip`: plain HTTP has no certificate to
// prove the server is `name`, so a secret only goes to an address of the name.
bool resolves_to(const std::string& name, uint32_t ip, std::chrono::milliseconds timeout) {
  auto addresses = ipv4_addresses(name, timeout);
  return addresses && std::find(addresses->begin(), addresses->end(), ip) != addresses->end();
}

// Whether a connection decided under `before` still goes the same way under `after`.
bool same_route(const Policy& before, const Policy& after, const std::string& name) {
  if (before.egress_proxy != after.egress_proxy) return false;
  const HostRule* a = name.empty() ? nullptr : rule_for(before, name);
  const HostRule* b = name.empty() ? nullptr : rule_for(after, name);
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && *a == *b);
}

void set_socket_options(int fd) {
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

struct EgressProxy::Impl {
  // An open connection, as policy_changed() and the destructor see it. The
  // connection's thread owns the sockets; the record's copies are shut down
  // (never closed) to cut it, and leave the record before the sockets close.
  struct Record {
    uint32_t source = 0, ip = 0;
    uint16_t port = 0;
    std::string name;
    std::shared_ptr<const Policy> policy;  // what it was allowed under; null: not decided yet
    int client = -1, upstream = -1;
    bool cut = false;
    ActivityStamp activity;  // when it last moved a byte
  };

  ProxyConfig config;
  std::unique_ptr<CertificateAuthority> ca;
  std::shared_ptr<SSL_CTX> upstream_tls;
  UniqueFd listener;
  uint16_t listening_port = 0;
  std::thread acceptor;

  std::mutex mutex;
  bool stopping = false;
  uint64_t next_id = 1;
  std::map<uint64_t, Record> records;
  std::unique_ptr<SlotTable> slots;
  std::map<uint64_t, std::thread> threads;
  std::vector<uint64_t> finished;

  void accept_loop();
  void serve(UniqueFd client, sockaddr_in original_dst);
  void run(uint64_t id, UniqueFd client, UniqueFd upstream, uint32_t source, sockaddr_in dst);
  std::string handle(uint64_t id, int client, int upstream, uint32_t source, uint32_t ip,
                     uint16_t port, const ActivityStamp& activity, NetworkEvent& event);
  RequestObserver request_observer(uint32_t source, const NetworkEvent& connection) const;
  ProxyConfig::Team team_of(uint32_t source) const;
  // A lookup that does not answer in time is a name without that address.
  bool name_has(const std::string& name, uint32_t ip) const {
    if (!config.resolves_to) return resolves_to(name, ip, config.lookup_timeout);
    auto has = within<bool>(config.lookup_timeout,
                            [f = config.resolves_to, name, ip] { return f(name, ip); });
    return has && *has;
  }
  std::shared_ptr<const Policy> decide(uint64_t id, uint32_t source, uint32_t ip,
                                       const std::string& name);
  bool is_cut(uint64_t id);
  static void cut(Record& record);
  void reap();
};

void EgressProxy::Impl::cut(Record& record) {
  record.cut = true;
  if (record.client >= 0) ::shutdown(record.client, SHUT_RDWR);
  if (record.upstream >= 0) ::shutdown(record.upstream, SHUT_RDWR);
}

bool EgressProxy::Impl::is_cut(uint64_t id) {
  std::lock_guard lock(mutex);
  return records.at(id).cut;
}

// Joins the threads of connections that are over.
void EgressProxy::Impl::reap() {
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mutex);
    for (const uint64_t id : finished) {
      done.push_back(std::move(threads.at(id)));
      threads.erase(id);
    }
    finished.clear();
  }
  for (std::thread& t : done) t.join();
}

void EgressProxy::Impl::accept_loop() {
  for (;;) {
    UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) {
      {
        std::lock_guard lock(mutex);
        if (stopping) return;
      }
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // out of fds: let some close
      continue;
    }
    sockaddr_in original{};
    socklen_t size = sizeof original;
    sockaddr_in local{};
    socklen_t local_size = sizeof local;
    if (::getsockopt(client.get(), SOL_IP, SO_ORIGINAL_DST, &original, &size) != 0 ||
        ::getsockname(client.get(), reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
        (original.sin_addr.s_addr == local.sin_addr.s_addr &&
         original.sin_port == local.sin_port)) {
      // Not redirected here by NAT (dialled directly): there is nowhere to relay it to.
      spdlog::debug("egress: refused a connection without an original destination");
      continue;
    }
    serve(std::move(client), original);
  }
}

void EgressProxy::Impl::serve(UniqueFd client, sockaddr_in original_dst) {
  reap();
  sockaddr_in peer{};
  socklen_t size = sizeof peer;
  if (::getpeername(client.get(), reinterpret_cast<sockaddr*>(&peer), &size) != 0 ||
      peer.sin_family != AF_INET) {
    spdlog::debug("egress: refused a connection that is not IPv4");
    return;
  }
  const uint32_t source = ntohl(peer.sin_addr.s_addr);
  const ProxyConfig::Team team = team_of(source);
  UniqueFd upstream(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  std::lock_guard lock(mutex);
  if (stopping || !upstream.valid()) return;
  const SlotTable::Admission admission = slots->admit(source, team.key, team.max_connections);
  if (!admission.admitted) {
    spdlog::debug("egress: refused {}: {}", address_text(source), admission.refusal);
    return;
  }
  if (admission.evict) {  // its thread ends and closes it; the slot is this one's now
    Record& victim = records.at(*admission.evict);
    spdlog::debug("egress: closed {} -> {}:{} to make room for another team",
                  address_text(victim.source), address_text(victim.ip), victim.port);
    cut(victim);
    slots->remove(*admission.evict);
  }
  set_socket_options(client.get());
  const uint64_t id = next_id++;
  Record& record = records[id];
  record.source = source;
  record.ip = ntohl(original_dst.sin_addr.s_addr);
  record.port = ntohs(original_dst.sin_port);
  record.client = client.get();
  record.upstream = upstream.get();
  record.activity = std::make_shared<std::atomic<int64_t>>(activity_now());
  slots->add(id, source, team.key, record.activity);
  try {
    threads.emplace(id, std::thread(&Impl::run, this, id, std::move(client), std::move(upstream),
                                    source, original_dst));
  } catch (const std::system_error&) {  // no thread to be had: refuse, never fail the daemon
    records.erase(id);
    slots->remove(id);
    spdlog::debug("egress: refused {}: no thread for it", address_text(source));
  }
}

void EgressProxy::Impl::run(uint64_t id, UniqueFd client, UniqueFd upstream, uint32_t source,
                            sockaddr_in dst) {
  const uint32_t ip = ntohl(dst.sin_addr.s_addr);
  const uint16_t port = ntohs(dst.sin_port);
  ActivityStamp activity;
  {
    std::lock_guard lock(mutex);
    activity = records.at(id).activity;
  }
  const auto started = Clock::now();
  NetworkEvent event;
  event.kind = NetworkEvent::Kind::kConnection;
  event.ip = ip;
  event.port = port;
  const std::string refusal =
      handle(id, client.get(), upstream.get(), source, ip, port, activity, event);
  if (!refusal.empty())
    spdlog::debug("egress: refused {} -> {}:{}: {}", address_text(source), address_text(ip), port,
                  refusal);
  if (config.record && refusal != kNoSandbox) {
    event.allowed = refusal.empty();
    if (!event.allowed) event.reason = refusal;
    event.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
    config.record(source, event);
  }
  std::lock_guard lock(mutex);
  records.erase(id);
  slots->remove(id);
  finished.push_back(id);
  // The sockets close as this returns: after the record that names them is gone.
}

// Decides with the policy current now, and records the decision so that a
// policy_changed() from here on sees this connection; a change that raced
// with the decision is caught by looking again.
std::shared_ptr<const Policy> EgressProxy::Impl::decide(uint64_t id, uint32_t source, uint32_t ip,
                                                        const std::string& name) {
  std::shared_ptr<const Policy> policy = config.policy_for(source);
  for (int attempt = 0; attempt < 8 && policy; ++attempt) {
    if (!allows(*policy, ip, name)) return nullptr;
    {
      std::lock_guard lock(mutex);
      Record& record = records.at(id);
      if (record.cut) return nullptr;
      record.name = name;
      record.policy = policy;
    }
    std::shared_ptr<const Policy> now = config.policy_for(source);
    if (now == policy || (now && *now == *policy)) return policy;
    policy = std::move(now);
  }
  return nullptr;
}

// Serves one connection; returns why it was refused ("" when it was served).
// `event` gets the name the connection gave, the rule that allowed it and the
// bytes it moved.
std::string EgressProxy::Impl::handle(uint64_t id, int client, int upstream, uint32_t source,
                                      uint32_t ip, uint16_t port, const ActivityStamp& activity,
                                      NetworkEvent& event) {
  if (!config.policy_for || !config.policy_for(source)) return std::string(kNoSandbox);
  if (config.always_denied && config.always_denied(ip)) return "the destination is always denied";
  FirstBytes first;
  const auto& ports = config.peek_ports;
  if (std::find(ports.begin(), ports.end(), port) != ports.end())
    first = peek_first_bytes(client, config.peek_timeout);
  if (first.ambiguous) return "an ambiguous request (two Host headers)";
  event.host = first.name;
  const std::shared_ptr<const Policy> policy = decide(id, source, ip, first.name);
  if (!policy) {
    const auto now = config.policy_for(source);
    return "the policy denies it" + (now ? " (" + deciding_rule(*now, ip, first.name) + ")" : "");
  }
  event.reason = deciding_rule(*policy, ip, first.name);
  // Allowed by its name alone: the name is the sandbox's word, so the address
  // dialled must be one the name has, or any address would pass as it.
  if (!first.name.empty() && !allows(*policy, ip, "") && !name_has(first.name, ip))
    return "the name " + first.name + " does not resolve to the address dialled";
  const HostRule* rule = first.name.empty() ? nullptr : rule_for(*policy, first.name);

  const DialOptions options{config.always_denied, upstream,
                            Clock::now() + config.handshake_timeout};
  auto tunnel = policy->egress_proxy ? dial_socks5(*policy->egress_proxy, ip, port, options)
                                     : dial_direct(ip, port, options);
  if (!tunnel) return tunnel.error().message();
  if (is_cut(id)) return "cut by a policy change";
  const int on = 1;
  ::setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);

  PlainStream sandbox_socket(client);
  StampedStream sandbox(sandbox_socket, activity);
  StampedStream upstream_stream(tunnel->stream(), activity);
  const auto secret = [this, source, host = first.name](const std::string& name,
                                                        const std::string& header) {
    return config.secret ? config.secret(source, name, host, header) : std::nullopt;
  };
  // With secrets in its requests, a connection's responses are read too: a
  // header echoing one back never reaches the sandbox.
  ExchangeLog log;
  ResponseFilter responses(log);
  HttpFilter* response_filter = rule != nullptr && needs_secret(*rule) ? &responses : nullptr;
  ExchangeLog* noted = response_filter != nullptr ? &log : nullptr;  // nothing else reads it
  if (rule != nullptr) event.reason += "; header rule " + rule->host;
  const RequestObserver observe = request_observer(source, event);
  Relayed relayed;
  if (rule != nullptr && first.protocol == Protocol::kTls) {
    SSL* ssl = SSL_new(upstream_tls.get());
    if (ssl == nullptr) return "TLS setup failed";
    SSL_set_tlsext_host_name(ssl, first.name.c_str());
    SSL_set1_host(ssl, first.name.c_str());
    SSL_set_connect_state(ssl);
    TlsStream real(ssl, upstream_stream);
    const auto deadline = Clock::now() + config.handshake_timeout;
    if (Status s = real.handshake(deadline); !s) return "upstream " + s.error().message();
    const auto context = ca->server_context(first.name);
    if (!context) return "could not mint a certificate for " + first.name;
    SSL* server = SSL_new(context.get());
    if (server == nullptr) return "TLS setup failed";
    SSL_set_accept_state(server);
    TlsStream terminated(server, sandbox);
    if (Status s = terminated.handshake(Clock::now() + config.handshake_timeout); !s)
      return "sandbox " + s.error().message();
    RequestRewriter rewriter(*rule, first.name, secret, true, noted, observe);
    relayed = relay(terminated, real, &rewriter, response_filter, config.idle_timeout);
  } else if (rule != nullptr && first.protocol == Protocol::kHttp) {
    const bool secrets_allowed = !needs_secret(*rule) || name_has(first.name, ip);
    RequestRewriter rewriter(*rule, first.name, secret, secrets_allowed, noted, observe);
    relayed = relay(sandbox, upstream_stream, &rewriter, response_filter, config.idle_timeout);
  } else {
    relayed = relay(sandbox, upstream_stream, nullptr, nullptr, config.idle_timeout);
  }
  event.bytes_out = relayed.out;
  event.bytes_in = relayed.in;
  return {};
}

// Each request through the intercepting proxy, as an event of the sandbox's.
RequestObserver EgressProxy::Impl::request_observer(uint32_t source,
                                                    const NetworkEvent& connection) const {
  if (!config.record) return nullptr;
  return [record = config.record, source, host = connection.host, ip = connection.ip,
          port = connection.port](const RequestNote& note) {
    NetworkEvent event;
    event.kind = NetworkEvent::Kind::kRequest;
    event.host = host;
    event.ip = ip;
    event.port = port;
    event.method = note.method;
    event.path = note.path;
    event.secrets = note.secrets;
    event.allowed = note.refusal.empty();
    event.reason = note.refusal;
    record(source, event);
  };
}

// A sandbox of no known team is a team of its own; a team with no cap of its
// own may hold half the table, so another team always finds room.
ProxyConfig::Team EgressProxy::Impl::team_of(uint32_t source) const {
  ProxyConfig::Team team;
  if (config.team_for) team = config.team_for(source);
  if (team.key.empty()) team.key = "sandbox:" + address_text(source);
  if (team.max_connections == 0)
    team.max_connections = std::max<size_t>(1, config.max_connections / 2);
  return team;
}

Result<std::unique_ptr<EgressProxy>> EgressProxy::start(ProxyConfig config, uint16_t port) {
  auto impl = std::make_unique<Impl>();
  auto ca = CertificateAuthority::open(config.ca_dir);
  if (!ca) return ca.error();
  auto upstream = upstream_context(config.upstream_ca_file);
  if (!upstream) return upstream.error();
  impl->ca = std::move(*ca);
  impl->upstream_tls = std::move(*upstream);
  impl->config = std::move(config);
  impl->config.record = limit_rate(
      std::move(impl->config.record),
      std::make_shared<EventRate>(impl->config.events_per_second, impl->config.event_burst));
  impl->slots =
      std::make_unique<SlotTable>(impl->config.max_connections, impl->config.max_per_sandbox);

  impl->listener = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!impl->listener.valid()) return Error::from_errno("egress proxy: socket");
  const int on = 1;
  ::setsockopt(impl->listener.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(port);
  if (::bind(impl->listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    return Error::from_errno("egress proxy: bind", "0.0.0.0:" + std::to_string(port));
  if (::listen(impl->listener.get(), 1024) != 0) return Error::from_errno("egress proxy: listen");
  socklen_t size = sizeof address;
  ::getsockname(impl->listener.get(), reinterpret_cast<sockaddr*>(&address), &size);
  impl->listening_port = ntohs(address.sin_port);
  impl->acceptor = std::thread(&Impl::accept_loop, impl.get());
  return std::unique_ptr<EgressProxy>(new EgressProxy(std::move(impl)));
}

EgressProxy::EgressProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EgressProxy::~EgressProxy() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  ::shutdown(impl_->listener.get(), SHUT_RDWR);  // wakes accept(2)
  impl_->acceptor.join();
  std::map<uint64_t, std::thread> threads;
  {
    std::lock_guard lock(impl_->mutex);
    for (auto& [id, record] : impl_->records) Impl::cut(record);
    threads.swap(impl_->threads);
    impl_->finished.clear();
  }
  for (auto& [id, thread] : threads) thread.join();
}

uint16_t EgressProxy::port() const { return impl_->listening_port; }

std::string EgressProxy::ca_pem() const { return impl_->ca->pem(); }

void EgressProxy::serve(UniqueFd client, sockaddr_in original_dst) {
  impl_->serve(std::move(client), original_dst);
}

void EgressProxy::policy_changed(uint32_t source_ip) {
  const std::shared_ptr<const Policy> policy =
      impl_->config.policy_for ? impl_->config.policy_for(source_ip) : nullptr;
  std::lock_guard lock(impl_->mutex);
  for (auto& [id, record] : impl_->records) {
    if (record.source != source_ip || !record.policy || record.cut) continue;
    const bool keep = policy && allows(*policy, record.ip, record.name) &&
                      same_route(*record.policy, *policy, record.name);
    if (keep) {
      record.policy = policy;
    } else {
      spdlog::debug("egress: cut {} -> {}:{} after a policy change", address_text(source_ip),
                    address_text(record.ip), record.port);
      Impl::cut(record);
    }
  }
}

}  // namespace abx::egress
