// Debian's lxcfs, run by the runtime: a FUSE filesystem whose /proc files
// (meminfo, cpuinfo, stat, uptime, loadavg, ...) describe the reading
// process's own cgroup limits. Each sandbox's init binds them over its /proc,
// so `free`, `top` and a program sizing itself see what the sandbox may use.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace abx::runtime {

namespace fs = std::filesystem;

class Lxcfs {
 public:
  // Mounts lxcfs at `mountpoint`, or reuses one an earlier daemon left
  // running there for sandboxes that outlived it. nullptr (and a warning)
  // when lxcfs is not installed or does not start.
  static std::unique_ptr<Lxcfs> start(const fs::path& mountpoint,
                                      std::vector<std::string>* warnings);

  Lxcfs(fs::path mountpoint, pid_t pid, bool child, std::vector<std::string> views);
  Lxcfs(const Lxcfs&) = delete;
  Lxcfs& operator=(const Lxcfs&) = delete;
  ~Lxcfs() = default;  // leaves it running: stop() is for when no sandbox reads it

  fs::path proc_dir() const { return mountpoint_ / "proc"; }
  // False once lxcfs has died: sandboxes made then keep the kernel's files.
  bool answering() const;
  // The names under proc_dir() to bind over the sandbox's /proc.
  const std::vector<std::string>& views() const { return views_; }
  // Unmounts and ends lxcfs; call only when no sandbox is left to read it.
  void stop();

 private:
  fs::path mountpoint_;
  pid_t pid_;
  bool child_;  // ours to reap (else an earlier daemon's)
  std::vector<std::string> views_;
};

}  // namespace abx::runtime
