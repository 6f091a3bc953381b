#include "runtime/net_pool.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <sys/file.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace abx::runtime {
namespace {

bool overlaps(const egress::Cidr& a, const egress::Cidr& b) {
  const uint8_t prefix = std::min(a.prefix, b.prefix);
  const egress::Cidr wider{a.network & (prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix)), prefix};
  return wider.contains(b.network) && wider.contains(a.network);
}

// Networks the host already routes or holds an address in; a pool there
// would shadow them.
std::vector<egress::Cidr> host_networks() {
  std::vector<egress::Cidr> out;
  std::ifstream routes("/proc/net/route");
  std::string line;
  std::getline(routes, line);  // header
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    std::string iface;
    unsigned dest = 0, gateway = 0, flags = 0, refcnt = 0, use = 0, metric = 0, mask = 0;
    fields >> iface >> std::hex >> dest >> gateway >> flags >> std::dec >> refcnt >> use >>
        metric >> std::hex >> mask;
    if (!fields || mask == 0) continue;  // the default route overlaps everything: not a clash
    const uint32_t m = ntohl(mask);
    out.push_back({ntohl(dest) & m, static_cast<uint8_t>(__builtin_popcount(m))});
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET)
        out.push_back({ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr), 32});
    ::freeifaddrs(list);
  }
  return out;
}

// Held for the daemon's life; the kernel drops it when the daemon dies.
Result<UniqueFd> lock_pool(const egress::Cidr& cidr, const std::filesystem::path& lock_dir) {
  std::error_code ec;
  std::filesystem::create_directories(lock_dir, ec);
  if (ec) return Error{"create network lock dir", ec.value(), lock_dir.string()};
  std::string name = cidr.text();
  std::replace(name.begin(), name.end(), '/', '_');
  const auto path = lock_dir / ("pool-" + name + ".lock");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::from_errno("open network pool lock", path.string());
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return Error{"claim network pool", errno == EWOULDBLOCK ? EBUSY : errno,
                 cidr.text() + " is held by another abx daemon"};
  return fd;
}

Result<egress::Cidr> parse_pool(const std::string& text) {
  auto cidr = egress::parse_cidr(text);
  if (!cidr || cidr->prefix != 16)
    return Error{"network pool", EINVAL,
                 "'" + text + "' is not a /16 network (e.g. 10.200.0.0/16): set network.pool"};
  return *cidr;
}

}  // namespace

std::string ipv4_text(uint32_t ip) {
  in_addr a{htonl(ip)};
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

NetPool::NetPool(egress::Cidr cidr, UniqueFd lock)
    : cidr_(cidr), lock_(std::move(lock)), used_(kSlots, false) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "ab%04x-", cidr.network >> 16);
  prefix_ = prefix;
  used_[0] = true;
}

NetPool::NetPool(NetPool&& other) noexcept
    : cidr_(other.cidr_),
      prefix_(std::move(other.prefix_)),
      lock_(std::move(other.lock_)),
      used_(std::move(other.used_)),
      next_(other.next_) {}

Result<NetPool> NetPool::claim(const std::string& wanted, const std::string& previous,
                               const std::filesystem::path& lock_dir) {
  const std::vector<egress::Cidr> taken = host_networks();
  auto clashes = [&](const egress::Cidr& c) {
    return std::any_of(taken.begin(), taken.end(),
                       [&](const egress::Cidr& t) { return overlaps(c, t); });
  };
  if (!wanted.empty()) {
    auto cidr = parse_pool(wanted);
    if (!cidr) return cidr.error();
    auto lock = lock_pool(*cidr, lock_dir);
    if (!lock) return lock.error();
    return NetPool(*cidr, std::move(*lock));
  }
  // The pool this state dir had: its sandboxes still running hold routes
  // in it, which are no clash; they are adopted only in the same pool.
  if (auto before = egress::parse_cidr(previous); before && before->prefix == 16)
    if (auto lock = lock_pool(*before, lock_dir)) return NetPool(*before, std::move(*lock));
  for (uint32_t second = 200; second <= 254; ++second) {
    const egress::Cidr cidr{(10u << 24) | (second << 16), 16};
    if (clashes(cidr)) continue;
    if (auto lock = lock_pool(cidr, lock_dir)) return NetPool(cidr, std::move(*lock));
  }
  return Error{"network pool", EADDRINUSE,
               "every /16 of 10.200.0.0-10.254.0.0 is routed on this host or held by another "
               "daemon: set network.pool to a free /16"};
}

Result<NetPool> NetPool::claim_exact(const egress::Cidr& cidr,
                                     const std::filesystem::path& lock_dir) {
  auto lock = lock_pool(cidr, lock_dir);
  if (!lock) return lock.error();
  return NetPool(cidr, std::move(*lock));
}

uint32_t NetPool::slot_of_address(uint32_t ip) const {
  if (!cidr_.contains(ip) || (ip & 3) != 2) return 0;
  return (ip - cidr_.network) / 4;
}

uint32_t NetPool::slot_of_link(const std::string& name) const {
  if (name.rfind(prefix_, 0) != 0 || name.size() == prefix_.size()) return 0;
  uint32_t slot = 0;
  for (char c : name.substr(prefix_.size())) {
    if (c < '0' || c > '9' || slot >= kSlots) return 0;
    slot = slot * 10 + static_cast<uint32_t>(c - '0');
  }
  return slot < kSlots ? slot : 0;
}

uint32_t NetPool::take() {
  std::lock_guard lock(mutex_);
  for (uint32_t i = 0; i < kSlots; ++i) {
    const uint32_t slot = (next_ + i) % kSlots;
    if (used_[slot]) continue;
    used_[slot] = true;
    next_ = slot + 1;  // round robin: a freed slot rests before reuse
    return slot;
  }
  return 0;
}

bool NetPool::hold(uint32_t slot) {
  std::lock_guard lock(mutex_);
  if (slot == 0 || slot >= kSlots || used_[slot]) return false;
  used_[slot] = true;
  return true;
}

void NetPool::give_back(uint32_t slot) {
  std::lock_guard lock(mutex_);
  if (slot > 0 && slot < kSlots) used_[slot] = false;
}

}  // namespace abx::runtime
