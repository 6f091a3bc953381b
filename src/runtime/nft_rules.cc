#include "runtime/nft_rules.h"

#include <fcntl.h>
#include <nftables/libnftables.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

namespace abx::runtime {
namespace {

// libnftables opens its netlink socket without SOCK_CLOEXEC and keeps it for
// the context's life: ours to mark, or every child the daemon starts would
// hold it. No fd past stderr is meant for a child, so all are marked (by
// number: the socket may take the number the listing's own fd just had).
void all_close_on_exec() {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec))
    fds.push_back(std::atoi(entry.path().filename().c_str()));
  for (int fd : fds) {
    const int flags = fd > 2 ? ::fcntl(fd, F_GETFD) : -1;
    if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

// The error (or output) of the last command; reading it empties the buffer.
std::string taken(const char* buffer) {
  std::string text = buffer ? buffer : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string join(const std::vector<egress::Cidr>& cidrs) {
  std::string out;
  for (const egress::Cidr& c : cidrs) out += (out.empty() ? "" : ", ") + c.text();
  return out;
}

std::string set_decl(const std::string& name, const std::vector<egress::Cidr>& elements) {
  std::string out = "  set " + name + " { type ipv4_addr; flags interval; auto-merge;";
  if (!elements.empty()) out += " elements = { " + join(elements) + " };";
  return out + " }\n";
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

}  // namespace

NftRules::NftRules(const NetPool& pool, NftPorts ports, std::vector<egress::Cidr> opened,
                   const NetworkConfig& bounds)
    : pool_(pool),
      ports_(ports),
      opened_(std::move(opened)),
      max_connections_(bounds.max_connections),
      dns_flows_(bounds.dns_flows),
      proxy_flows_(bounds.proxy_flows),
      max_connections_all_(bounds.max_connections_all) {
  table_ = table_of(pool.cidr());
}

std::string NftRules::table_of(const egress::Cidr& pool) {
  char name[32];
  std::snprintf(name, sizeof name, "inet abx_%04x", pool.network >> 16);
  return name;
}

void NftRules::CtxFree::operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }

Result<std::vector<egress::Cidr>> NftRules::pools_with_tables() {
  std::string listing;
  {
    std::lock_guard lock(mutex_);
    const int rc = nft_run_cmd_from_buffer(ctx_.get(), "list tables inet");
    const std::string why = taken(nft_ctx_get_error_buffer(ctx_.get()));
    listing = taken(nft_ctx_get_output_buffer(ctx_.get()));
    if (rc != 0) return Error{"list nftables tables", EIO, why};
  }
  std::vector<egress::Cidr> pools;
  size_t at = 0;
  while ((at = listing.find("table inet abx_", at)) != std::string::npos) {
    at += std::strlen("table inet abx_");
    unsigned prefix = 0;
    int used = 0;
    if (std::sscanf(listing.c_str() + at, "%4x%n", &prefix, &used) == 1 && used == 4)
      pools.push_back({uint32_t{prefix} << 16, 16});
  }
  return pools;
}

Status NftRules::remove_pool_table(const egress::Cidr& pool) {
  const std::string table = table_of(pool);
  return run("add table " + table + "\ndelete table " + table + "\n",
             "remove a stale nftables table");
}

Result<std::unique_ptr<NftRules>> NftRules::open(const NetPool& pool, NftPorts ports,
                                                 std::vector<egress::Cidr> opened,
                                                 const NetworkConfig& bounds) {
  std::unique_ptr<NftRules> rules(new NftRules(pool, ports, std::move(opened), bounds));
  // One context for the daemon's life, made while its fds are few: its
  // netlink socket is waited on with select(), which aborts the process for
  // an fd past 1023 (a daemon with a few hundred sandboxes holds more).
  rules->ctx_.reset(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!rules->ctx_) return Error{"nftables", ENOMEM, "nft_ctx_new"};
  all_close_on_exec();
  nft_ctx_buffer_output(rules->ctx_.get());
  nft_ctx_buffer_error(rules->ctx_.get());
  return rules;
}

Status NftRules::run(const std::string& commands, const std::string& step) {
  std::lock_guard lock(mutex_);
  const int rc = nft_run_cmd_from_buffer(ctx_.get(), commands.c_str());
  std::string why = taken(nft_ctx_get_error_buffer(ctx_.get()));
  (void)nft_ctx_get_output_buffer(ctx_.get());
  if (rc == 0) return {};
  if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
  return Error{step, EIO, why};
}

// The kernel tracks a closed TCP connection 120 s (TIME_WAIT) and a UDP
// exchange 30 s, and a `ct count` forgets a connection once it is closed: a
// sandbox that opens and closes connections in a loop filled the table past
// every count. Its flows are tracked shorter (kClosedSeconds), so what
// closed ones hold is at most the rate of new flows times that.
std::string NftRules::short_timeouts() const {
  const std::string links = quoted(pool_.link_prefix() + "*");
  const std::string s = std::to_string(kClosedSeconds);
  std::string t = "  ct timeout abx_tcp {\n    protocol tcp; l3proto ip;\n";
  t += "    policy = { time_wait: " + s + ", close: " + s + " }\n  }\n";
  t += "  ct timeout abx_udp {\n    protocol udp; l3proto ip;\n";
  t += "    policy = { unreplied: " + s + " }\n  }\n";
  t += "  chain track {\n    type filter hook prerouting priority mangle; policy accept;\n";
  t += "    iifname " + links + " ct state new meta l4proto tcp ct timeout set \"abx_tcp\"\n";
  t += "    iifname " + links + " ct state new meta l4proto udp ct timeout set \"abx_udp\"\n  }\n";
  return t;
}

std::string NftRules::base_ruleset(bool with_short_timeouts) const {
  const std::string links = quoted(pool_.link_prefix() + "*");
  std::string t = "table " + table_ + " {\n";
  if (with_short_timeouts) t += short_timeouts();
  t += set_decl("denied", egress::always_denied_ranges());
  t += set_decl("opened", opened_);
  t += "  map sandboxes { type ifname : verdict; }\n";
  t += "  map redirects { type ifname : verdict; }\n";
  t += "  chain refuse {\n    meta l4proto tcp reject with tcp reset\n"
       "    reject with icmpx type admin-prohibited\n  }\n";
  // One count for every sandbox's flows (cap_N jumps here): the table is the
  // host's, and a count per sandbox alone grows with the number of sandboxes.
  if (max_connections_all_)
    t += "  chain cap_all {\n    ct state new ct count over " +
         std::to_string(max_connections_all_) + " goto refuse\n  }\n";
  t += "  chain prerouting {\n    type nat hook prerouting priority dstnat; policy accept;\n"
       "    iifname vmap @redirects\n  }\n";
  t += "  chain postrouting {\n    type nat hook postrouting priority srcnat; policy accept;\n"
       "    ip saddr " +
       pool_.cidr().text() + " oifname != " + links + " masquerade\n  }\n";
  std::string host_ports;
  for (uint16_t port : {ports_.dns, ports_.proxy})
    if (port) host_ports += (host_ports.empty() ? "" : ", ") + std::to_string(port);
  t += "  chain input {\n    type filter hook input priority filter; policy accept;\n";
  if (!host_ports.empty()) {
    const std::string to_ours = " meta l4proto { tcp, udp } th dport { " + host_ports + " }";
    // Redirected flows pass only through their sandbox's chains: its bounds.
    t += "    iifname " + links + to_ours + " ct status dnat iifname vmap @sandboxes\n";
    // The resolver and proxy serve this pool's sandboxes, no one else. Only
    // new flows: a reply to a host client whose own port happens to be one of
    // these (another daemon's resolver port, say) is not ours to drop.
    t += "    iifname != " + links + to_ours + " ct state new drop\n";
  }
  t += "    iifname " + links + " goto refuse\n  }\n";
  t += "  chain forward {\n    type filter hook forward priority filter; policy accept;\n"
       "    iifname " +
       links +
       " goto egress\n"
       "    oifname " +
       links +
       " ct state established,related accept\n"
       "    oifname " +
       links + " drop\n  }\n";
  t += "  chain egress {\n    meta nfproto ipv6 drop\n"
       "    oifname " +
       links +
       " goto refuse\n"
       "    ip daddr " +
       pool_.cidr().text() +
       " goto refuse\n"
       "    ip daddr @opened iifname vmap @sandboxes\n"
       "    ip daddr @denied goto refuse\n"
       "    iifname vmap @sandboxes\n"
       "    goto refuse\n  }\n";
  return t + "}\n";
}

Status NftRules::install() {
  const std::string replace = "add table " + table_ + "\ndelete table " + table_ + "\n";
  if (run(replace + base_ruleset(true), "install nftables rules")) return {};
  // A kernel without conntrack timeout objects (nf_conntrack_timeout).
  short_timeouts_ = false;
  return run(replace + base_ruleset(false), "install nftables rules");
}

Status NftRules::remove() {
  return run("add table " + table_ + "\ndelete table " + table_ + "\n", "remove nftables rules");
}

// A sandbox has five chains and no named set of its own: libnftables reads
// every set of the table (not its chains) into its cache before each
// transaction, so per-sandbox sets made each create and kill cost time that
// grew with the number of sandboxes (~0.4 s at 1000; each map's elements are
// read too, so its two maps serve forward and input alike). sb_N, host_N and
// cap_N hold what never changes: its source address and its bounds, state
// kept across policy updates. sb_N is where the forward and input chains send
// its packets; the redirected ones (to the DNS forwarder and the proxy, seen
// only in input) go on to host_N, the others to pol_N. cap_N is the one `ct
// count` of all its flows wherever they go (a rule's count is shared by every
// chain that jumps to it), then jumps to cap_all, the count of every
// sandbox's flows together; host_N adds the bounds of flows to the daemon,
// new ones limited in rate before they are counted (so a dropped flow leaves
// nothing in a count). pol_N and nat_N are the policy, rewritten whole in one
// transaction when it changes.
Status NftRules::add_sandbox(uint32_t slot) {
  const std::string n = std::to_string(slot);
  const std::string link = quoted(pool_.link_name(slot));
  const std::string t = table_;
  std::string c;
  for (const char* chain : {"cap_", "sb_", "host_", "pol_", "nat_"})
    c += "add chain " + t + " " + chain + n + "\n";
  const std::string cap = "add rule " + t + " cap_" + n + " ";
  c += cap + "ip saddr != " + ipv4_text(pool_.address(slot)) + " goto refuse\n";
  c += cap + "ct state new limit rate over " + std::to_string(kAllFlows.per_second) +
       "/second burst " + std::to_string(kAllFlows.burst) + " packets drop\n";
  c += cap + "ct state new ct count over " + std::to_string(max_connections_) + " goto refuse\n";
  if (max_connections_all_) c += cap + "jump cap_all\n";
  const std::string sb = "add rule " + t + " sb_" + n + " ";
  // Redirected to the host: only input sees those (forward may see a flow
  // another table DNATs elsewhere, which pol_N judges; fib only for those).
  c += sb + "ct status dnat fib daddr type local goto host_" + n + "\n";
  c += sb + "jump cap_" + n + "\n";
  c += sb + "goto pol_" + n + "\n";
  c += host_rules(slot);
  c += "add element " + t + " sandboxes { " + link + " : goto sb_" + n + " }\n";
  c += "add element " + t + " redirects { " + link + " : goto nat_" + n + " }\n";
  // One transaction: the chains are reached only once they refuse all.
  const egress::Policy refuse_all{{}, {egress::kAllTraffic}, {}, {}, {}, {}, {}};
  return run(c + policy_commands(slot, refuse_all), "add sandbox nftables rules");
}

// New flows beyond the rate are dropped (a client sends again a little
// later, as after a lost packet) before anything counts them; beyond the
// count they are refused (the client hears at once).
std::string NftRules::host_rules(uint32_t slot) const {
  const std::string n = std::to_string(slot);
  const std::string host = "add rule " + table_ + " host_" + n + " ";
  std::vector<std::pair<std::string, FlowBound>> bounds;
  if (ports_.dns) bounds.emplace_back("th dport " + std::to_string(ports_.dns), dns_flows_);
  if (ports_.proxy) bounds.emplace_back("tcp dport " + std::to_string(ports_.proxy), proxy_flows_);
  // Only TCP and UDP come here (the input chain's match): `th` needs no
  // protocol set, which would be a set of this sandbox's in the table.
  std::string c;
  for (const auto& [match, bound] : bounds)
    c += host + "ct state new " + match + " limit rate over " + std::to_string(bound.per_second) +
         "/second burst " + std::to_string(bound.burst) + " packets drop\n";
  c += host + "jump cap_" + n + "\n";
  c += host + "ct state != new accept\n";
  for (const auto& [match, bound] : bounds)
    c += host + match + " ct count over " + std::to_string(bound.at_once) + " goto refuse\n";
  return c + host + "accept\n";
}

Status NftRules::set_policy(uint32_t slot, const egress::Policy& policy) {
  return run(policy_commands(slot, policy), "set sandbox egress policy");
}

namespace {

// Up to this many addresses a list is a rule per entry; beyond, one
// anonymous set (a set in the table, which libnftables' cache then reads).
constexpr size_t kRulesPerList = 16;

// Rules matching `prefix` + "ip daddr X" for each of `cidrs`, then `suffix`.
std::string daddr_rules(const std::string& prefix, const std::vector<egress::Cidr>& cidrs,
                        const std::string& suffix) {
  if (cidrs.empty()) return {};
  if (cidrs.size() > kRulesPerList) return prefix + "ip daddr { " + join(cidrs) + " }" + suffix;
  std::string out;
  for (const egress::Cidr& c : cidrs) out += prefix + "ip daddr " + c.text() + suffix;
  return out;
}

}  // namespace

std::string NftRules::policy_commands(uint32_t slot, const egress::Policy& policy) const {
  const std::string n = std::to_string(slot);
  const std::string t = table_;
  // E2B opens the DNS servers (8.8.8.8 by default) once names are allowed:
  // for DNS only, or they would be a way around the names.
  std::vector<egress::Cidr> dns_servers;
  if (!policy.allow_hosts.empty())
    for (uint32_t ip : policy.dns_servers.value_or(std::vector<uint32_t>{0x08080808}))
      dns_servers.push_back({ip, 32});
  // A SOCKS proxy carries all TCP; names and headers are only in HTTP(S).
  std::vector<std::string> proxied;
  if (ports_.proxy && policy.needs_proxy()) {
    if (policy.egress_proxy)
      proxied = {"meta l4proto tcp"};
    else
      proxied = {"tcp dport 80", "tcp dport 443"};
  }
  std::string c = "flush chain " + t + " pol_" + n + "\nflush chain " + t + " nat_" + n + "\n";
  const std::string pol = "add rule " + t + " pol_" + n + " ";
  // TCP the proxy must see (names, headers, SOCKS) never passes around it,
  // not even on a connection opened before the policy wanted the proxy, and
  // not even to a DNS server (with SOCKS, all TCP is the proxy's).
  for (const std::string& match : proxied) c += pol + match + " goto refuse\n";
  for (const char* proto : {"udp", "tcp"})
    c += daddr_rules(pol, dns_servers, std::string(" ") + proto + " dport 53 accept\n");
  c += daddr_rules(pol, policy.allow_cidrs, " accept\n");
  c += daddr_rules(pol, policy.deny_cidrs, " goto refuse\n");
  c += pol + "accept\n";
  const std::string nat = "add rule " + t + " nat_" + n + " ";
  c += nat + "ip saddr != " + ipv4_text(pool_.address(slot)) + " return\n";  // a spoof: nowhere
  // A policy under which no name resolves has no use for the forwarder: its
  // queries are refused here and make no flow at all.
  const bool names_resolve = !policy.allow_hosts.empty() || !policy.denies_all();
  if (ports_.dns && names_resolve)
    for (const char* proto : {"udp", "tcp"})
      c += nat + "ip daddr " + ipv4_text(pool_.gateway(slot)) + " " + proto +
           " dport 53 redirect to :" + std::to_string(ports_.dns) + "\n";
  for (const std::string& match : proxied)
    c += nat + "ip daddr != @denied " + match + " redirect to :" + std::to_string(ports_.proxy) +
         "\n";
  return c;
}

// Flushed before deleted: a chain with rules cannot go, and sb_N's and
// host_N's rules are what refer to cap_N and pol_N.
Status NftRules::remove_sandbox(uint32_t slot) {
  const std::string n = std::to_string(slot);
  const std::string link = quoted(pool_.link_name(slot));
  const std::string t = table_;
  std::string c;
  c += "delete element " + t + " sandboxes { " + link + " }\n";
  c += "delete element " + t + " redirects { " + link + " }\n";
  for (const char* chain : {"sb_", "host_", "cap_", "pol_", "nat_"})
    c += "flush chain " + t + " " + chain + n + "\n";
  for (const char* chain : {"sb_", "host_", "cap_", "pol_", "nat_"})
    c += "delete chain " + t + " " + chain + n + "\n";
  return run(c, "remove sandbox nftables rules");
}

}  // namespace abx::runtime
