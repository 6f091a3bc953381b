#include "agent/net.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common/unique_fd.h"
#include "runtime/root_paths.h"

namespace abx::agent::net {

Status set_hostname(const proto::InitConfig& config) {
  if (::sethostname(config.hostname.data(), config.hostname.size()) != 0)
    return Error::from_errno("sethostname", config.hostname);
  return {};
}

namespace {

// Replaces `name` in /etc (even a symlink the template left there) with
// `text`. /etc is resolved inside the root: a magic link of /proc planted
// there (/proc/self/fd/N: init's own fds) is refused, not followed.
// A template without /etc, or with a read-only one, keeps what it has.
Status replace_file(int etc, const std::string& name, const std::string& text) {
  const std::string path = "/etc/" + name;
  if (::unlinkat(etc, name.c_str(), 0) != 0 && errno != ENOENT)
    return errno == EROFS ? Status{} : Error::from_errno("unlink", path);
  const int fd =
      ::openat(etc, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return errno == EROFS ? Status{} : Error::from_errno("create", path);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Error{"write", saved, path};
  return {};
}

}  // namespace

// So that `hostname` resolves, as in any container, and names resolve
// through the sandbox's gateway (the daemon's DNS forwarder).
// A build's writable layer becomes part of a template: it keeps the
// template's own files.
Status write_host_files(const proto::InitConfig& config) {
  if (config.host_writable_dir) return {};
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Error::from_errno("open /");
  auto etc = runtime::root_paths::open(root.get(), "/etc", O_PATH | O_DIRECTORY);
  if (!etc) return etc.error().errnum == ENOENT ? Status{} : etc.error();
  const std::string& name = config.hostname;
  if (auto s = replace_file(etc->get(), "hostname", name + "\n"); !s) return s;
  if (!config.nameserver.empty())
    if (auto s = replace_file(etc->get(), "resolv.conf", "nameserver " + config.nameserver + "\n");
        !s)
      return s;
  return replace_file(etc->get(), "hosts",
                      "127.0.0.1\tlocalhost " + name + "\n::1\tlocalhost " + name +
                          " ip6-localhost ip6-loopback\n");
}

Status loopback_up(const proto::InitConfig& /*config*/) {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Error::from_errno("socket for loopback");
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0) return Error::from_errno("get lo flags");
  req.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &req) != 0) return Error::from_errno("bring lo up");
  return {};
}

}  // namespace abx::agent::net
