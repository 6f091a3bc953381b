#include "runtime/process_tree.h"

#include <unistd.h>

#include <sstream>
#include <vector>

#include "common/fd_io.h"

namespace abx::runtime::process_tree {
namespace {

struct ProcStatus {
  std::vector<pid_t> ns_pids;  // NSpid: the host's first, the innermost last
  pid_t host_ppid = 0;
};

std::optional<ProcStatus> read_status(pid_t host_pid) {
  auto text = read_file("/proc/" + std::to_string(host_pid) + "/status");
  if (!text) return std::nullopt;
  ProcStatus status;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "PPid:") fields >> status.host_ppid;
    if (key == "NSpid:")
      for (pid_t pid; fields >> pid;) status.ns_pids.push_back(pid);
  }
  return status;
}

// The pid one level below the daemon's namespace: the sandbox's.
pid_t sandbox_pid(const ProcStatus& status, size_t daemon_level) {
  return status.ns_pids.size() > daemon_level + 1 ? status.ns_pids[daemon_level + 1] : 0;
}

std::string command_line(pid_t host_pid) {
  auto text = read_file("/proc/" + std::to_string(host_pid) + "/cmdline");
  std::string out = text ? std::move(*text) : std::string();
  if (out.size() > kCommandChars) out.resize(kCommandChars);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out)
    if (c == '\0') c = ' ';
  return out;
}

}  // namespace

size_t own_pid_namespace_level() {
  const auto status = read_status(::getpid());
  return status && !status->ns_pids.empty() ? status->ns_pids.size() - 1 : 0;
}

std::optional<ProcessEntry> describe(pid_t host_pid, size_t daemon_level) {
  const auto status = read_status(host_pid);
  if (!status) return std::nullopt;
  ProcessEntry entry;
  entry.pid = sandbox_pid(*status, daemon_level);
  if (entry.pid == 0) return std::nullopt;  // not in a namespace below ours
  if (const auto parent = read_status(status->host_ppid))
    entry.ppid = sandbox_pid(*parent, daemon_level);
  entry.command = command_line(host_pid);
  return entry;
}

}  // namespace abx::runtime::process_tree
