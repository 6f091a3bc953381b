#include "runtime/lxcfs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "runtime/helper_spawn.h"

namespace abx::runtime {
namespace {

constexpr long kFuseSuperMagic = 0x65735546;
constexpr auto kStartWait = std::chrono::seconds(5);
constexpr auto kPoll = std::chrono::milliseconds(20);
// What lxcfs virtualises that a program sizing itself reads (slabinfo is
// root-only on the host and says nothing about limits).
constexpr const char* kViews[] = {"meminfo", "cpuinfo", "stat",     "uptime",
                                  "loadavg", "swaps",   "diskstats"};

const char* find_binary() {
  for (const char* path : {"/usr/bin/lxcfs", "/usr/local/bin/lxcfs", "/bin/lxcfs"})
    if (::access(path, X_OK) == 0) return path;
  return nullptr;
}

// A FUSE mount whose daemon answers (a dead one fails statfs with ENOTCONN).
bool answers(const fs::path& mountpoint) {
  struct statfs st {};
  if (::statfs(mountpoint.c_str(), &st) != 0 || st.f_type != kFuseSuperMagic) return false;
  return ::access((mountpoint / "proc" / "meminfo").c_str(), R_OK) == 0;
}

fs::path pid_file(const fs::path& mountpoint) { return mountpoint.string() + ".pid"; }

pid_t running_lxcfs(const fs::path& mountpoint) {
  pid_t pid = 0;
  std::ifstream(pid_file(mountpoint)) >> pid;
  std::string comm;
  if (pid > 0) std::ifstream("/proc/" + std::to_string(pid) + "/comm") >> comm;
  return comm == "lxcfs" ? pid : 0;
}

std::vector<std::string> present_views(const fs::path& mountpoint) {
  std::vector<std::string> views;
  for (const char* name : kViews) {
    struct stat st {};
    if (::stat((mountpoint / "proc" / name).c_str(), &st) == 0 && S_ISREG(st.st_mode))
      views.emplace_back(name);
  }
  return views;
}

// Its own session (spawn_helper): lxcfs outlives the daemon while sandboxes still read it.
pid_t spawn(const char* binary, const fs::path& mountpoint) {
  const std::string pid_path = pid_file(mountpoint).string();
  auto pid = spawn_helper(binary,
                          {"lxcfs", "--foreground", "--enable-cfs", "--enable-loadavg",
                           "--enable-pidfd", "--pidfile", pid_path, mountpoint.string()},
                          mountpoint.string() + ".log");
  return pid ? *pid : 0;
}

bool wait_for_exit(pid_t pid, bool child, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (child ? ::waitpid(pid, nullptr, WNOHANG) != 0 : ::kill(pid, 0) != 0) return true;
    std::this_thread::sleep_for(kPoll);
  }
  return false;
}

void end(pid_t pid, bool child) {
  ::kill(pid, SIGTERM);
  if (wait_for_exit(pid, child, std::chrono::seconds(2))) return;
  ::kill(pid, SIGKILL);
  (void)wait_for_exit(pid, child, std::chrono::seconds(2));
}

}  // namespace

Lxcfs::Lxcfs(fs::path mountpoint, pid_t pid, bool child, std::vector<std::string> views)
    : mountpoint_(std::move(mountpoint)), pid_(pid), child_(child), views_(std::move(views)) {}

std::unique_ptr<Lxcfs> Lxcfs::start(const fs::path& mountpoint,
                                    std::vector<std::string>* warnings) {
  const std::string without =
      ": sandboxes see the host's /proc/meminfo, cpuinfo, stat, uptime and loadavg, not "
      "their own limits";
  const char* binary = find_binary();
  if (!binary) {
    warnings->push_back("lxcfs is not installed (apt-get install lxcfs)" + without);
    return nullptr;
  }
  if (answers(mountpoint))
    if (const pid_t pid = running_lxcfs(mountpoint))
      return std::make_unique<Lxcfs>(mountpoint, pid, false, present_views(mountpoint));
  ::umount2(mountpoint.c_str(), MNT_DETACH);  // a dead one's mount, if any
  std::error_code ec;
  fs::create_directories(mountpoint, ec);
  const pid_t pid = spawn(binary, mountpoint);
  if (pid <= 0) {
    warnings->push_back("lxcfs did not start (spawn failed)" + without);
    return nullptr;
  }
  const auto deadline = std::chrono::steady_clock::now() + kStartWait;
  while (!answers(mountpoint)) {
    if (::waitpid(pid, nullptr, WNOHANG) != 0 || std::chrono::steady_clock::now() > deadline) {
      end(pid, true);
      ::umount2(mountpoint.c_str(), MNT_DETACH);
      warnings->push_back("lxcfs did not start (see " + mountpoint.string() + ".log)" + without);
      return nullptr;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return std::make_unique<Lxcfs>(mountpoint, pid, true, present_views(mountpoint));
}

bool Lxcfs::answering() const { return answers(mountpoint_); }

// Once unmounted nothing reads it and it has nothing to save: SIGKILL at once.
// Its SIGTERM often left it running until end()'s 2 s grace ran out, and so
// every daemon stop took 2 to 4 s.
void Lxcfs::stop() {
  ::umount2(mountpoint_.c_str(), MNT_DETACH);
  ::kill(pid_, SIGKILL);
  (void)wait_for_exit(pid_, child_, std::chrono::seconds(2));
  std::error_code ec;
  fs::remove(pid_file(mountpoint_), ec);
  fs::remove(mountpoint_, ec);
}

}  // namespace abx::runtime
