// The sandboxes' DNS forwarder. Each sandbox's resolv.conf names its gateway;
// the runtime redirects the sandbox's port 53 (UDP and TCP) to this
// forwarder's port in the host's network namespace. The forwarder knows the
// sandbox by its source IPv4 address, answers NXDOMAIN at once for names its
// policy does not resolve (resolves() in policy.h) and forwards the other
// queries to the host's resolvers, relaying their answers unchanged.
//
// Every query is hostile input: only a standard query with one plain question
// is considered, unknown sources get no answer at all, and every table
// (pending queries, TCP connections) is bounded, per source and in total.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "egress/network_event.h"
#include "egress/policy.h"

namespace abx::egress {

struct DnsConfig {
  // The policy of the sandbox at `source_ip` (host byte order), or nullptr for
  // an address that is no sandbox's: its queries are dropped silently. Called
  // on the forwarder's thread for every query: must be thread-safe and quick.
  std::function<std::shared_ptr<const Policy>(uint32_t source_ip)> policy_for;
  // Told of each name a sandbox asks and the verdict, the same name and
  // verdict at most once per source in 10 s (the repeats counted); null: no one.
  NetworkRecorder record;
  // Where allowed queries go, tried in order. Empty: the IPv4 nameservers of
  // `resolv_conf` (a local stub such as 127.0.0.53 is fine: we are on the host).
  std::vector<sockaddr_in> upstreams;
  std::string resolv_conf = "/etc/resolv.conf";
  // How long an upstream has to answer before the next one is asked; after
  // the last one the client gets SERVFAIL.
  std::chrono::milliseconds upstream_timeout{2000};
  // A TCP client connection that sends no query (or reads no reply) this long is closed.
  std::chrono::milliseconds tcp_idle_timeout{10000};
  size_t max_pending = 4096, max_pending_per_source = 256;  // UDP queries awaiting upstreams
  size_t max_tcp_connections = 256, max_tcp_per_source = 16;
  // Queries (UDP and TCP) a sandbox may send per second, and in a burst;
  // more are dropped, as a rate-limited resolver does. One sandbox must not
  // flood the host's resolvers, nor the forwarder's one thread.
  double queries_per_second = 200, query_burst = 400;
};

class DnsForwarder {
 public:
  // Binds UDP and TCP on 0.0.0.0:`port` (0: a free port, the same number for
  // both) and serves on a thread of its own until destroyed.
  static Result<std::unique_ptr<DnsForwarder>> start(DnsConfig config, uint16_t port);
  ~DnsForwarder();  // stops, joins the thread, closes every socket
  DnsForwarder(const DnsForwarder&) = delete;
  DnsForwarder& operator=(const DnsForwarder&) = delete;

  uint16_t port() const;

 private:
  class Impl;
  explicit DnsForwarder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The wire format pieces the forwarder needs, exposed for unit tests.
namespace dns {

inline constexpr uint8_t kServFail = 2, kNxDomain = 3, kRefused = 5;  // RCODEs
inline constexpr size_t kHeaderSize = 12;

struct Question {
  std::string name;   // lower case, dotted, no trailing dot; "" for the root
  uint16_t type = 0;  // QTYPE
  size_t end = 0;     // offset just past the question (name, QTYPE, QCLASS)
};

// The question of a standard query (QR 0, opcode QUERY, QDCOUNT 1) whose name
// is plain labels (no compression pointer), each 1..63 bytes of printable
// ASCII other than '.', at most 255 bytes in all; nullopt for anything else.
std::optional<Question> parse_query(std::span<const uint8_t> packet);
std::optional<std::string> query_name(std::span<const uint8_t> packet);

// Whether `reply` is a response to `query` (whose question ends at
// `question_end`): QR set, one question, the same question (names compared
// without regard to case). The ID is not compared here.
bool answers(std::span<const uint8_t> reply, std::span<const uint8_t> query, size_t question_end);

// A reply carrying only `rcode` to a query parse_query accepts: the query's
// ID, RD copied, RA set, its question echoed. Empty for a query it rejects.
std::vector<uint8_t> error_reply(std::span<const uint8_t> query, uint8_t rcode);

// The IPv4 `nameserver` lines of a resolv.conf, port 53.
std::vector<sockaddr_in> parse_resolv_conf(std::string_view text);

}  // namespace dns
}  // namespace abx::egress
