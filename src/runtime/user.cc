#include "runtime/user.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "common/fd_io.h"
#include "runtime/raw_clone.h"

namespace abx::runtime::user {
namespace {

constexpr uint32_t kSandboxIds = 65536;
constexpr uint32_t kRootDefaultBase = 100000;
constexpr uid_t kOverflowId = 65534;

struct Range {
  uint32_t start = 0, count = 0;
};

// /etc/subuid lines are "name-or-uid:start:count".
std::optional<Range> subordinate_range(const char* file, uid_t uid) {
  auto text = read_file(file);  // close-on-exec, unlike an ifstream
  std::istringstream in(text ? std::move(*text) : std::string());
  const passwd* pw = ::getpwuid(uid);
  const std::string name = pw != nullptr ? pw->pw_name : "";
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string owner, start, count;
    if (!std::getline(fields, owner, ':') || !std::getline(fields, start, ':') ||
        !std::getline(fields, count))
      continue;
    if (owner != name && owner != std::to_string(uid)) continue;
    try {
      Range r{static_cast<uint32_t>(std::stoul(start)), static_cast<uint32_t>(std::stoul(count))};
      if (r.count >= kSandboxIds) return r;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

Status write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno("open " + path);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Error{"write " + path, saved, text};
  return {};
}

std::string map_lines(uint32_t zero, uint32_t rest, uint32_t count) {
  std::string text = "0 " + std::to_string(zero) + " 1\n";
  if (count > 1) text += "1 " + std::to_string(rest) + " " + std::to_string(count - 1) + "\n";
  return text;
}

Status run_helper(const char* helper, pid_t pid, uint32_t zero, uint32_t rest, uint32_t count) {
  std::vector<std::string> args = {helper,
                                   std::to_string(pid),
                                   "0",
                                   std::to_string(zero),
                                   "1",
                                   "1",
                                   std::to_string(rest),
                                   std::to_string(count - 1)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  // posix_spawn uses CLONE_VFORK: safe from a multi-threaded daemon.
  if (const int rc = ::posix_spawn(&child, helper, nullptr, nullptr, argv.data(), environ); rc != 0)
    return Error{std::string("spawn ") + helper, rc, {}};
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{helper, EPERM, "exited with status " + std::to_string(status)};
  return {};
}

}  // namespace

uid_t IdMap::host_uid(uint32_t id) const {
  if (id == 0 || !full()) return uid_zero;
  return id < count ? uid_rest + id - 1 : kOverflowId;
}

gid_t IdMap::host_gid(uint32_t id) const {
  if (id == 0 || !full()) return gid_zero;
  return id < count ? gid_rest + id - 1 : kOverflowId;
}

namespace {

std::optional<uint32_t> inverse(uint32_t host, uint32_t zero, uint32_t rest, uint32_t count,
                                bool full) {
  if (host == zero) return 0;
  if (full && host >= rest && host - rest < count - 1) return host - rest + 1;
  return std::nullopt;
}

std::string translation_lines(uint32_t from_zero, uint32_t from_rest, uint32_t to_zero,
                              uint32_t to_rest, uint32_t count) {
  std::string text = std::to_string(from_zero) + " " + std::to_string(to_zero) + " 1\n";
  if (count > 1)
    text += std::to_string(from_rest) + " " + std::to_string(to_rest) + " " +
            std::to_string(count - 1) + "\n";
  return text;
}

// The holder of a new user namespace: it is born in it (CLONE_NEWUSER) and
// sleeps until the parent, having mapped and opened the namespace, kills it.
// It shares the daemon's fd table (its listening socket, abx.db), so it must
// die with the daemon too: a daemon SIGKILLed between clone and kill left it
// holding the port forever. The parent check covers a death before prctl.
ABX_CHILD_CODE int hold_namespace(void* parent) {
  ::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::syscall(SYS_getppid) != reinterpret_cast<intptr_t>(parent)) ::syscall(SYS_exit_group, 0);
  for (;;) ::syscall(SYS_pause);
}

}  // namespace

std::optional<uint32_t> IdMap::sandbox_uid(uid_t host) const {
  return inverse(host, uid_zero, uid_rest, count, full());
}

std::optional<uint32_t> IdMap::sandbox_gid(gid_t host) const {
  return inverse(host, gid_zero, gid_rest, count, full());
}

// A clone that shares the daemon's memory and fd table (nothing copied, as
// a fork of the daemon would copy its page tables and make every page it
// writes next fault), with every signal blocked so no daemon handler runs on
// its stack.
Result<UniqueFd> translating_namespace(const IdMap& from, const IdMap& to) {
  constexpr size_t kStackSize = 16 * 1024;
  const auto stack = std::make_unique<char[]>(kStackSize);
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = libc_clone()(hold_namespace, stack.get() + kStackSize,
                                 CLONE_VM | CLONE_FILES | CLONE_NEWUSER | SIGCHLD,
                                 reinterpret_cast<void*>(intptr_t{::getpid()}));
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return Error{"clone a user namespace", clone_errno, {}};
  const std::string proc = "/proc/" + std::to_string(pid);
  const uint32_t count = std::min(from.count, to.count);
  Status mapped = write_file(proc + "/uid_map", translation_lines(from.uid_zero, from.uid_rest,
                                                                  to.uid_zero, to.uid_rest, count));
  if (mapped)
    mapped = write_file(proc + "/gid_map", translation_lines(from.gid_zero, from.gid_rest,
                                                             to.gid_zero, to.gid_rest, count));
  UniqueFd ns(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  const int open_errno = errno;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!mapped) return mapped.error();
  if (!ns.valid()) return Error{"open the new user namespace", open_errno, {}};
  return ns;
}

IdMap choose(std::vector<std::string>* warnings) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  const auto subuid = subordinate_range("/etc/subuid", uid);
  const auto subgid = subordinate_range("/etc/subgid", uid);
  if (uid == 0) {
    const uint32_t ubase = subuid ? subuid->start : kRootDefaultBase;
    const uint32_t gbase = subgid ? subgid->start : kRootDefaultBase;
    return IdMap{ubase, ubase + 1, gbase, gbase + 1, kSandboxIds, false};
  }
  const bool helpers =
      ::access("/usr/bin/newuidmap", X_OK) == 0 && ::access("/usr/bin/newgidmap", X_OK) == 0;
  if (subuid && subgid && helpers)
    return IdMap{uid, subuid->start, gid, subgid->start, kSandboxIds, true};
  warnings->push_back(
      "rootless without /etc/subuid+/etc/subgid ranges and newuidmap/newgidmap: only sandbox "
      "uid 0 is mapped, so every process runs as that single uid (uid 1000 falls back to 0)");
  return IdMap{uid, uid, gid, gid, 1, false};
}

Status write_maps(pid_t pid, const IdMap& map) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (map.use_helpers) {
    if (auto s = run_helper("/usr/bin/newuidmap", pid, map.uid_zero, map.uid_rest, map.count); !s)
      return s;
    return run_helper("/usr/bin/newgidmap", pid, map.gid_zero, map.gid_rest, map.count);
  }
  if (!map.full()) {
    // An unprivileged writer may map its own gid only after giving up setgroups.
    if (auto s = write_file(proc + "/setgroups", "deny"); !s) return s;
  }
  if (auto s = write_file(proc + "/uid_map", map_lines(map.uid_zero, map.uid_rest, map.count)); !s)
    return s;
  return write_file(proc + "/gid_map", map_lines(map.gid_zero, map.gid_rest, map.count));
}

}  // namespace abx::runtime::user
