#include "runtime/net_links.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <sched.h>

#include <memory>
#include <thread>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx::runtime::net_links {
namespace {

struct SockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct LinkPut {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrPut {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct NlAddrPut {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct RoutePut {
  void operator()(rtnl_route* r) const { rtnl_route_put(r); }
};
struct CacheFree {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using Sock = std::unique_ptr<nl_sock, SockFree>;
using Link = std::unique_ptr<rtnl_link, LinkPut>;
using NlAddr = std::unique_ptr<nl_addr, NlAddrPut>;

Error nl_error(const std::string& step, int err, const std::string& what) {
  return Error{step, EIO, what + ": " + nl_geterror(err)};
}

// A socket bound to the calling thread's network namespace.
Result<Sock> route_socket() {
  Sock sock(nl_socket_alloc());
  if (!sock) return Error{"netlink socket", ENOMEM, {}};
  if (int err = nl_connect(sock.get(), NETLINK_ROUTE); err < 0)
    return nl_error("netlink connect", err, "route");
  return sock;
}

NlAddr ipv4(uint32_t ip, int prefix) {
  const uint32_t net = htonl(ip);
  NlAddr a(nl_addr_build(AF_INET, &net, sizeof net));
  if (a) nl_addr_set_prefixlen(a.get(), prefix);
  return a;
}

// IPv6 stays off on sandbox links: the policy is IPv4's. A kernel without
// IPv6 has no such file, and nothing to turn off.
Status ipv6_off(const std::string& conf) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + conf + "/disable_ipv6";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errno == ENOENT ? Status{} : Error::from_errno("open", path);
  return write_all(fd.get(), "1", "turn IPv6 off", path);
}

Status add_address(nl_sock* sock, int ifindex, uint32_t ip, const std::string& name) {
  std::unique_ptr<rtnl_addr, AddrPut> addr(rtnl_addr_alloc());
  NlAddr local = ipv4(ip, 30);
  if (!addr || !local) return Error{"add address", ENOMEM, name};
  rtnl_addr_set_ifindex(addr.get(), ifindex);
  if (int err = rtnl_addr_set_local(addr.get(), local.get()); err < 0)
    return nl_error("add address", err, name);
  if (int err = rtnl_addr_add(sock, addr.get(), 0); err < 0)
    return nl_error("add address", err, name);
  return {};
}

Status set_up(nl_sock* sock, const std::string& name) {
  rtnl_link* found = nullptr;
  if (int err = rtnl_link_get_kernel(sock, 0, name.c_str(), &found); err < 0)
    return nl_error("find link", err, name);
  Link link(found);
  Link change(rtnl_link_alloc());
  if (!change) return Error{"bring link up", ENOMEM, name};
  rtnl_link_set_flags(change.get(), IFF_UP);
  if (int err = rtnl_link_change(sock, link.get(), change.get(), 0); err < 0)
    return nl_error("bring link up", err, name);
  return {};
}

Result<int> index_of(nl_sock* sock, const std::string& name) {
  rtnl_link* found = nullptr;
  if (int err = rtnl_link_get_kernel(sock, 0, name.c_str(), &found); err < 0)
    return nl_error("find link", err, name);
  Link link(found);
  return rtnl_link_get_ifindex(link.get());
}

Status add_default_route(nl_sock* sock, int ifindex, uint32_t gateway) {
  std::unique_ptr<rtnl_route, RoutePut> route(rtnl_route_alloc());
  NlAddr any = ipv4(0, 0);
  NlAddr via = ipv4(gateway, 32);
  rtnl_nexthop* hop = rtnl_route_nh_alloc();
  if (!route || !any || !via || !hop) {
    if (hop) rtnl_route_nh_free(hop);
    return Error{"add default route", ENOMEM, {}};
  }
  rtnl_route_set_family(route.get(), AF_INET);
  rtnl_route_set_dst(route.get(), any.get());
  rtnl_route_nh_set_ifindex(hop, ifindex);
  rtnl_route_nh_set_gateway(hop, via.get());
  rtnl_route_add_nexthop(route.get(), hop);  // the route owns it now
  if (int err = rtnl_route_add(sock, route.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0)
    return nl_error("add default route", err, "eth0");
  return {};
}

Status configure_here(uint32_t address, uint32_t gateway) {
  // Not "all": loopback keeps ::1, which servers and clients of "localhost" expect.
  for (const char* conf : {"default", "eth0"})
    if (auto s = ipv6_off(conf); !s) return s;
  auto sock = route_socket();
  if (!sock) return sock.error();
  auto index = index_of(sock->get(), "eth0");
  if (!index) return index.error();
  if (auto s = add_address(sock->get(), *index, address, "eth0"); !s) return s;
  if (auto s = set_up(sock->get(), "eth0"); !s) return s;
  return add_default_route(sock->get(), *index, gateway);
}

}  // namespace

Status create_veth(const std::string& host_name, int net_ns_fd) {
  auto sock = route_socket();
  if (!sock) return sock.error();
  Link link(rtnl_link_veth_alloc());
  if (!link) return Error{"create veth", ENOMEM, host_name};
  rtnl_link_set_name(link.get(), host_name.c_str());
  Link peer(rtnl_link_veth_get_peer(link.get()));
  rtnl_link_set_name(peer.get(), "eth0");
  // One queue each, not one per CPU: a queue's state and its sysfs entries
  // are kernel memory per sandbox, and more only pay with XDP, unused here.
  for (rtnl_link* end : {link.get(), peer.get()}) {
    rtnl_link_set_num_tx_queues(end, 1);
    rtnl_link_set_num_rx_queues(end, 1);
  }
  rtnl_link_set_ns_fd(peer.get(), net_ns_fd);
  if (int err = rtnl_link_add(sock->get(), link.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0)
    return nl_error("create veth", err, host_name);
  return {};
}

Status configure_host_end(const std::string& name, uint32_t gateway) {
  if (auto s = ipv6_off(name); !s) return s;
  // Strict reverse-path filtering: a packet whose source is not the
  // sandbox's own address (a spoof by raw socket) is dropped on arrival.
  const std::string rp = "/proc/sys/net/ipv4/conf/" + name + "/rp_filter";
  UniqueFd fd(::open(rp.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", rp);
  if (auto s = write_all(fd.get(), "1", "turn on reverse-path filtering", rp); !s) return s;
  auto sock = route_socket();
  if (!sock) return sock.error();
  auto index = index_of(sock->get(), name);
  if (!index) return index.error();
  if (auto s = add_address(sock->get(), *index, gateway, name); !s) return s;
  return set_up(sock->get(), name);
}

// setns() moves only the calling thread, and the netlink socket and the
// /proc/sys/net files opened there belong to the namespace it is in then.
Status configure_inside(int net_ns_fd, uint32_t address, uint32_t gateway) {
  Status result = Error{"configure sandbox network", EINVAL, "not attempted"};
  std::thread worker([&] {
    if (::setns(net_ns_fd, CLONE_NEWNET) != 0)
      result = Error::from_errno("setns", "sandbox network");
    else
      result = configure_here(address, gateway);
  });
  worker.join();
  return result;
}

Status delete_link(const std::string& name) {
  auto sock = route_socket();
  if (!sock) return sock.error();
  Link link(rtnl_link_alloc());
  if (!link) return Error{"delete link", ENOMEM, name};
  rtnl_link_set_name(link.get(), name.c_str());
  if (int err = rtnl_link_delete(sock->get(), link.get());
      err < 0 && err != -NLE_NODEV && err != -NLE_OBJ_NOTFOUND)
    return nl_error("delete link", err, name);
  return {};
}

Result<std::vector<std::string>> links_with_prefix(const std::string& prefix) {
  auto sock = route_socket();
  if (!sock) return sock.error();
  nl_cache* raw = nullptr;
  if (int err = rtnl_link_alloc_cache(sock->get(), AF_UNSPEC, &raw); err < 0)
    return nl_error("list links", err, prefix);
  std::unique_ptr<nl_cache, CacheFree> cache(raw);
  std::vector<std::string> names;
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    const char* name = rtnl_link_get_name(reinterpret_cast<rtnl_link*>(o));
    if (name && std::string_view(name).rfind(prefix, 0) == 0) names.emplace_back(name);
  }
  return names;
}

Result<Counters> counters(const std::string& name) {
  auto sock = route_socket();
  if (!sock) return sock.error();
  rtnl_link* found = nullptr;
  if (int err = rtnl_link_get_kernel(sock->get(), 0, name.c_str(), &found); err < 0)
    return nl_error("read link counters", err, name);
  Link link(found);
  return Counters{rtnl_link_get_stat(link.get(), RTNL_LINK_RX_BYTES),
                  rtnl_link_get_stat(link.get(), RTNL_LINK_TX_BYTES)};
}

}  // namespace abx::runtime::net_links
