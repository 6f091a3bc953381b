#include "runtime/checkpoint.h"

#include <fcntl.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "runtime/helper_spawn.h"

namespace abx::runtime {
namespace {

namespace fs = std::filesystem;

bool executable(const fs::path& path) { return ::access(path.c_str(), X_OK) == 0; }

// The last line of `log` that says something (CRIU ends a failed check with
// its reason, e.g. "Unexpected rt vDSO area bounds").
std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

bool has_cap_sys_resource() {
  cap_t current = ::cap_get_proc();
  cap_flag_value_t value = CAP_CLEAR;
  if (current != nullptr) ::cap_get_flag(current, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &value);
  ::cap_free(current);
  return value == CAP_SET;
}

struct MountLine {
  std::string id, dev, root, mountpoint, fstype;
};

std::vector<MountLine> parse_mountinfo(const std::string& text) {
  std::vector<MountLine> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    MountLine m;
    std::string parent, word;
    if (!(fields >> m.id >> parent >> m.dev >> m.root >> m.mountpoint)) continue;
    while (fields >> word && word != "-") {
    }
    if (!(fields >> m.fstype)) continue;
    out.push_back(std::move(m));
  }
  return out;
}

// Filesystems CRIU mounts anew on restore when the whole of one is mounted.
bool recreatable(const std::string& fstype) {
  static const std::set<std::string> kinds = {"tmpfs", "proc",   "devpts",  "mqueue",
                                              "sysfs", "cgroup", "cgroup2", "overlay"};
  return kinds.contains(fstype);
}

// mnt_id of `fd` as its /proc/<pid>/fdinfo says; 0 if unknown.
uint64_t fd_mount_id(const std::string& fdinfo) {
  auto text = read_file(fdinfo);
  if (!text) return 0;
  const auto at = text->find("mnt_id:");
  return at == std::string::npos ? 0 : std::strtoull(text->c_str() + at + 7, nullptr, 10);
}

std::string file_key(uint64_t mount_id, uint64_t inode) {
  char key[64];
  std::snprintf(key, sizeof key, "file[%" PRIx64 ":%" PRIx64 "]", mount_id, inode);
  return key;
}

// `init` and every process under it (/proc/PID/task/TID/children).
std::vector<pid_t> tree_of(pid_t init) {
  std::vector<pid_t> out{init};
  for (size_t i = 0; i < out.size(); ++i) {
    std::error_code ec;
    const fs::path tasks = "/proc/" + std::to_string(out[i]) + "/task";
    for (const auto& task : fs::directory_iterator(tasks, ec)) {
      auto listed = read_file(task.path() / "children");
      std::istringstream children(listed ? *listed : std::string());
      for (pid_t child; children >> child;) out.push_back(child);
    }
  }
  return out;
}

std::string last_error(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find("Error") != std::string::npos) last = line;
  return last.empty() ? last_line(log) : last;
}

}  // namespace

std::vector<std::string> mount_externals(const std::string& mountinfo) {
  const std::vector<MountLine> mounts = parse_mountinfo(mountinfo);
  std::set<std::string> whole;  // devs mounted whole (root "/") in the namespace
  for (const auto& m : mounts)
    if (m.root == "/") whole.insert(m.dev);
  std::vector<std::string> out;
  for (const auto& m : mounts) {
    if (m.mountpoint == "/") continue;  // the restore's --root
    if (recreatable(m.fstype) && whole.contains(m.dev)) continue;
    out.push_back("--external");
    out.push_back("mnt[" + m.mountpoint + "]:m" + m.id);
  }
  return out;
}

Result<std::vector<std::string>> file_externals(pid_t init, const std::string& mountinfo) {
  std::set<uint64_t> inside;
  for (const auto& m : parse_mountinfo(mountinfo)) inside.insert(std::stoull(m.id));
  std::set<std::string> keys;
  auto consider = [&](const fs::path& link, uint64_t mount_id) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(link, ec);
    // Pipes, sockets, anonymous inodes and memfds are CRIU's own business.
    if (ec || target.native().rfind('/', 0) != 0 || target.native().rfind("/memfd:", 0) == 0)
      return;
    struct stat st {};
    if (mount_id == 0 || inside.contains(mount_id) || ::stat(link.c_str(), &st) != 0) return;
    keys.insert(file_key(mount_id, st.st_ino));
  };
  for (const pid_t pid : tree_of(init)) {
    const std::string proc = "/proc/" + std::to_string(pid);
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator(proc + "/fd", ec))
      consider(fd.path(), fd_mount_id(proc + "/fdinfo/" + fd.path().filename().string()));
    // The executable has no fdinfo: opened here, its mount is that of our fd.
    UniqueFd exe(::open((proc + "/exe").c_str(), O_PATH | O_CLOEXEC));
    if (exe.valid())
      consider(proc + "/exe", fd_mount_id("/proc/self/fdinfo/" + std::to_string(exe.get())));
  }
  std::vector<std::string> out;
  for (const auto& key : keys) {
    out.push_back("--external");
    out.push_back(key);
  }
  return out;
}

Status criu_dump(const fs::path& criu, pid_t init, const fs::path& images) {
  const std::string proc = "/proc/" + std::to_string(init);
  auto mountinfo = read_file(proc + "/mountinfo");
  if (!mountinfo) return Error::from_errno("checkpoint: read the sandbox's mounts", proc);
  auto files = file_externals(init, *mountinfo);
  if (!files) return files.error();
  std::vector<std::string> args = {"criu", "dump", "-t", std::to_string(init), "-D",
                                   images.string(), "-o", "dump.log", "-v4",
                                   "--manage-cgroups=ignore",
                                   // The veth cannot come back (docs/design/criu-checkpoint.md):
                                   // restore plumbs the network again.
                                   "--empty-ns", "net"};
  for (auto& a : mount_externals(*mountinfo)) args.push_back(std::move(a));
  for (auto& a : *files) args.push_back(std::move(a));
  auto pid = spawn_helper(criu.c_str(), args, images / "criu.out");
  if (!pid) return pid.error();
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  return Error{"checkpoint: criu dump", EIO, last_error(images / "dump.log")};
}

CheckpointSupport checkpoint_verdict(const CheckpointFacts& facts) {
  CheckpointSupport out;
  if (facts.criu) out.criu = *facts.criu;
  if (!facts.criu)
    out.reason = "no criu binary (make deps builds CRIU 4.x into /usr/local/sbin)";
  else if (!facts.root)
    out.reason = "the daemon does not run as root, which CRIU needs";
  else if (facts.check_failure)
    out.reason = "'" + facts.criu->string() + " check' fails: " + *facts.check_failure;
  else if (!facts.cap_sys_resource && !facts.root_owned_userns)
    // A sandbox's user namespace is owned by its own uid (spawner::start_init),
    // so without CAP_SYS_RESOURCE host root may not read its tasks' rlimits,
    // and CRIU stops at "Can't get rlimit 0: Operation not permitted".
    out.reason =
        "the daemon's root has no CAP_SYS_RESOURCE, which CRIU needs to read the rlimits of "
        "a sandbox whose user namespace its own uid owns";
  out.available = out.reason.empty();
  return out;
}

std::optional<fs::path> find_criu() {
  if (const char* set = std::getenv("ABX_CRIU"); set && *set) {
    if (executable(set)) return fs::path(set);
    return std::nullopt;
  }
  std::vector<fs::path> dirs;
  std::istringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty()) dirs.emplace_back(dir);
  for (const char* dir : {"/usr/local/sbin", "/usr/sbin", "/sbin"}) dirs.emplace_back(dir);
  for (const auto& dir : dirs)
    if (executable(dir / "criu")) return dir / "criu";
  return std::nullopt;
}

CheckpointSupport probe_checkpoint(const fs::path& log, bool root_owned_userns) {
  CheckpointFacts facts;
  facts.root_owned_userns = root_owned_userns;
  facts.criu = find_criu();
  facts.root = ::geteuid() == 0;
  facts.cap_sys_resource = has_cap_sys_resource();
  if (facts.criu && facts.root) {
    auto pid = spawn_helper(facts.criu->c_str(), {"criu", "check"}, log);
    int status = 0;
    if (!pid)
      facts.check_failure = pid.error().message();
    else {
      while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const std::string last = last_line(log);
        facts.check_failure = last.empty() ? "exit status " + std::to_string(status) : last;
      }
    }
    std::error_code ignored;  // read for its last line: nothing of it stays in the state dir
    fs::remove(log, ignored);
  }
  return checkpoint_verdict(facts);
}

}  // namespace abx::runtime
