#include "runtime/forwarding.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "common/fd_io.h"
#include "runtime/net_links.h"

namespace abx::runtime {
namespace {

constexpr const char* kSysctl = "/proc/sys/net/ipv4/ip_forward";

Result<UniqueFd> open_lock(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::from_errno("open forwarding lock", path.string());
  return fd;
}

bool forwarding_on() {
  auto now = read_file(kSysctl);
  return now && now->rfind('1', 0) == 0;
}

Status set_forwarding(bool on) {
  UniqueFd fd(::open(kSysctl, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", kSysctl);
  return write_all(fd.get(), on ? "1" : "0", "set IPv4 forwarding", kSysctl);
}

// A sandbox's host-side veth of any abx daemon: ab<4 hex>-<slot> (NetPool).
bool is_sandbox_link(const std::string& name) {
  if (name.size() < 8 || name.compare(0, 2, "ab") != 0 || name[6] != '-') return false;
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return std::all_of(name.begin() + 2, name.begin() + 6, hex) &&
         std::all_of(name.begin() + 7, name.end(), digit);
}

bool sandbox_links_left() {
  auto links = net_links::links_with_prefix("ab");
  if (!links) return true;  // cannot tell: keep forwarding
  return std::any_of(links->begin(), links->end(), is_sandbox_link);
}

}  // namespace

Result<ForwardingHold> ForwardingHold::acquire(const std::filesystem::path& lock_dir,
                                               std::vector<std::string>* warnings) {
  struct stat ns {};
  if (::stat("/proc/self/ns/net", &ns) != 0) return Error::from_errno("stat", "/proc/self/ns/net");
  std::error_code ec;
  std::filesystem::create_directories(lock_dir, ec);
  if (ec) return Error{"create network lock dir", ec.value(), lock_dir.string()};
  const std::string name = "forwarding-" + std::to_string(ns.st_ino);
  ForwardingHold hold;
  hold.users_ = lock_dir / (name + ".lock");
  hold.marker_ = lock_dir / (name + ".ours");
  auto fd = open_lock(hold.users_);
  if (!fd) return fd.error();
  // Waits while the last daemon of the namespace is turning forwarding off.
  if (::flock(fd->get(), LOCK_SH) != 0) return Error::from_errno("lock", hold.users_.string());
  hold.held_ = std::move(*fd);
  if (forwarding_on()) return hold;
  if (Status s = set_forwarding(true); !s) return s.error();
  UniqueFd marker(::open(hold.marker_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  warnings->push_back(
      "turned on IPv4 forwarding (net.ipv4.ip_forward=1) for sandbox NAT until the last abx "
      "daemon here stops; abx's nftables table forwards only its sandboxes' traffic");
  return hold;
}

void ForwardingHold::release() {
  if (!held_.valid()) return;
  held_.reset();
  auto fd = open_lock(users_);
  if (!fd) return;
  // Another daemon of the namespace still holds it shared: its sandboxes need it.
  if (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) return;
  if (::access(marker_.c_str(), F_OK) != 0 || sandbox_links_left()) return;
  if (set_forwarding(false)) ::unlink(marker_.c_str());
}

}  // namespace abx::runtime
