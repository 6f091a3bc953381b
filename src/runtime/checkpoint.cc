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

#include "agent/protocol.h"
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

// mountinfo escapes space, tab, newline and backslash as \ooo.
static std::string unescape(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

std::vector<MountSource> mount_sources(const std::string& mountinfo,
                                       const std::string& host_mountinfo) {
  const std::vector<MountLine> host = parse_mountinfo(host_mountinfo);
  std::vector<MountSource> out;
  const std::vector<std::string> externals = mount_externals(mountinfo);
  std::set<std::string> keys;
  for (size_t i = 1; i < externals.size(); i += 2)
    keys.insert(externals[i].substr(externals[i].rfind(':') + 1));
  for (const auto& m : parse_mountinfo(mountinfo)) {
    if (!keys.contains("m" + m.id)) continue;
    MountSource source{"m" + m.id, {}, unescape(m.root)};
    // The host mount of the same filesystem whose root holds this one's, deepest root first.
    size_t best = 0;
    for (const auto& h : host) {
      const std::string root = unescape(h.root);
      const std::string inner = source.stage_root;
      const bool holds =
          h.dev == m.dev && (root == "/" || inner == root || inner.rfind(root + "/", 0) == 0);
      if (!holds || (!source.host.empty() && root.size() < best)) continue;
      best = root.size();
      const std::string rest = root == "/" ? inner : inner.substr(root.size());
      const std::string at = unescape(h.mountpoint);
      source.host = at == "/" ? rest : rest == "/" ? at : at + rest;
    }
    out.push_back(std::move(source));
  }
  return out;
}

Result<std::vector<FileSource>> file_sources(pid_t init, const std::string& mountinfo) {
  std::set<uint64_t> inside;
  for (const auto& m : parse_mountinfo(mountinfo)) inside.insert(std::stoull(m.id));
  // A file on a mount outside the sandbox's root shows a path from its
  // mount's root: the host path is that mount's mountpoint (ours) and it.
  std::map<uint64_t, std::string> host_mounts;
  auto host = read_file("/proc/self/mountinfo");
  for (const auto& m : parse_mountinfo(host ? *host : std::string()))
    host_mounts[std::stoull(m.id)] = unescape(m.mountpoint);
  std::map<std::string, FileSource> found;
  auto consider = [&](const fs::path& link, uint64_t mount_id, int flags, bool upper) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(link, ec);
    // Pipes, sockets, anonymous inodes and memfds are CRIU's own business.
    if (ec || target.native().rfind('/', 0) != 0 || target.native().rfind("/memfd:", 0) == 0)
      return;
    struct stat st {};
    if (mount_id == 0 || inside.contains(mount_id) || ::stat(link.c_str(), &st) != 0) return;
    const std::string key = file_key(mount_id, st.st_ino);
    // The path shown is the host's, or one from its mount's root (a mount
    // the sandbox's root does not reach): whichever is the same file.
    std::string path = target.string();
    struct stat same {};
    const bool found_as_is =
        ::stat(path.c_str(), &same) == 0 && same.st_ino == st.st_ino && same.st_dev == st.st_dev;
    for (const auto& [id, at] : host_mounts) {
      if (found_as_is) break;
      if (::stat((at + path).c_str(), &same) == 0 && same.st_ino == st.st_ino &&
          same.st_dev == st.st_dev) {
        path = at + path;
        break;
      }
    }
    found.emplace(key, FileSource{key, upper ? kUpperPath : path, flags});
  };
  for (const pid_t pid : tree_of(init)) {
    const std::string proc = "/proc/" + std::to_string(pid);
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator(proc + "/fd", ec)) {
      const std::string name = fd.path().filename().string();
      const std::string fdinfo = proc + "/fdinfo/" + name;
      auto text = read_file(fdinfo);
      int flags = 0;
      if (text && text->find("flags:") != std::string::npos)
        flags = static_cast<int>(std::strtol(text->c_str() + text->find("flags:") + 6, nullptr, 8));
      const bool upper = pid == init && name == std::to_string(proto::kWritableLayerFd);
      consider(fd.path(), fd_mount_id(fdinfo), flags & (O_ACCMODE | O_PATH), upper);
    }
    // The executable has no fdinfo: opened here, its mount is that of our fd.
    UniqueFd exe(::open((proc + "/exe").c_str(), O_PATH | O_CLOEXEC));
    if (exe.valid())
      consider(proc + "/exe", fd_mount_id("/proc/self/fdinfo/" + std::to_string(exe.get())),
               O_RDONLY, false);
  }
  std::vector<FileSource> out;
  for (auto& [key, source] : found) out.push_back(std::move(source));
  return out;
}

Result<std::vector<std::string>> file_externals(pid_t init, const std::string& mountinfo) {
  auto sources = file_sources(init, mountinfo);
  if (!sources) return sources.error();
  std::vector<std::string> out;
  for (const auto& source : *sources) {
    out.push_back("--external");
    out.push_back(source.key);
  }
  return out;
}

Status record_restore_sources(pid_t init, const std::string& mountinfo, const fs::path& images) {
  const std::string proc = "/proc/" + std::to_string(init);
  auto host = read_file("/proc/self/mountinfo");
  auto files = file_sources(init, mountinfo);
  if (!host || !files) return Error::from_errno("checkpoint: read the mounts and files", proc);
  std::string mounts;
  for (const auto& m : mount_sources(mountinfo, *host)) {
    if (m.host.empty())
      mounts += m.key + "\tstage\t" + m.stage_root + "\n";
    else
      mounts += m.key + "\thost\t" + m.host + "\n";
  }
  std::string opened;
  for (const auto& f : *files)
    opened += f.key + "\t" + std::to_string(f.flags) + "\t" + f.path + "\n";
  // The stand-in pair a restore's daemon reaches init through (agent/protocol.h).
  std::error_code ec;
  const fs::path stand_in =
      fs::read_symlink(proc + "/fd/" + std::to_string(proto::kCheckpointListenFd), ec);
  if (ec || stand_in.native().rfind("socket:[", 0) != 0)
    return Error{"checkpoint", EPROTO, "init has no listener stand-in (an agent too old?)"};
  // The boot id the sandbox saw, not a new one (a bind of the staging tmpfs's file).
  auto boot_id = read_file(proc + "/root/proc/sys/kernel/random/boot_id");
  for (const auto& [name, text] :
       {std::pair{"restore_mounts", mounts}, std::pair{"restore_files", opened},
        std::pair{"boot_id", boot_id ? *boot_id : std::string()}}) {
    UniqueFd fd(::open((images / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd.valid()) return Error::from_errno("checkpoint: record", (images / name).string());
    if (auto s = write_all(fd.get(), text, "checkpoint: record", name); !s) return s;
  }
  return {};
}

Status criu_dump(const fs::path& criu, pid_t init, const fs::path& images) {
  const std::string proc = "/proc/" + std::to_string(init);
  auto mountinfo = read_file(proc + "/mountinfo");
  if (!mountinfo) return Error::from_errno("checkpoint: read the sandbox's mounts", proc);
  auto files = file_externals(init, *mountinfo);
  if (!files) return files.error();
  if (auto s = record_restore_sources(init, *mountinfo, images); !s) return s;
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
