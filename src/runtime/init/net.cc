#include "runtime/init/net.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "common/unique_fd.h"

namespace abx::runtime::init::net {

Status set_hostname(const proto::InitConfig& config) {
  if (::sethostname(config.hostname.data(), config.hostname.size()) != 0)
    return Error::from_errno("sethostname", config.hostname);
  return {};
}

Status loopback_up(const proto::InitConfig&) {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Error::from_errno("socket for loopback");
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0) return Error::from_errno("get lo flags");
  req.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &req) != 0) return Error::from_errno("bring lo up");
  return {};
}

}  // namespace abx::runtime::init::net
