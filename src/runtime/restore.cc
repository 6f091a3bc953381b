#include "runtime/restore.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "agent/protocol.h"
#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "runtime/checkpoint.h"
#include "runtime/helper_spawn.h"
#include "runtime/id_ranges.h"

namespace abx::runtime {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kBytesPerInode = 8192;  // as init's staging tmpfs (agent/mnt.cc)
constexpr uint64_t kMinInodes = 4096;
// The /dev skeleton init makes (agent/mnt.cc make_dev): the device nodes are
// bound onto these files by the restore, the links are the tmpfs's own.
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};
constexpr std::pair<const char*, const char*> kDevLinks[] = {
    {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"},
};
constexpr int kFirstInherited = 30;  // the helper's fds handed to CRIU

Status sys(int rc, const std::string& step, const std::string& what) {
  if (rc != 0) return Error::from_errno("restore: " + step, what);
  return {};
}

// A helper that has not ended after kHelperTimeoutS is killed with its
// process group (spawn_helper gives it a session): a stuck CRIU must not
// hold the daemon's thread for ever.
constexpr int kHelperTimeoutS = 60;

Status wait_helper(pid_t pid, const std::string& step, const fs::path& log) {
  int status = 0;
  for (int waited = 0;; ++waited) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    if (waited == kHelperTimeoutS * 10) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return Error{"restore: " + step, ETIMEDOUT,
                   "killed after " + std::to_string(kHelperTimeoutS) + " s; see " + log.string()};
    }
    ::usleep(100'000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  std::ifstream in(log);
  std::string line, last;
  // CRIU's first error is the cause; those after it are its consequences.
  bool error = false;
  while (std::getline(in, line)) {
    // Each run logs that it cannot raise its own fd limit (no CAP_SYS_RESOURCE): harmless.
    const bool this_error = line.find("Error") != std::string::npos &&
                            line.find("RLIMIT_NOFILE for self") == std::string::npos;
    if (!error && (this_error || last.empty())) last = line;
    error = error || this_error;
  }
  return Error{"restore: " + step, EIO, last.empty() ? log.string() : last};
}

// Made by host root, owned by sandbox root as init's were.
Status make_owned(const fs::path& path, mode_t mode, bool dir, uid_t owner) {
  if (dir) {
    if (auto s = sys(::mkdir(path.c_str(), mode), "mkdir", path); !s) return s;
  } else {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!fd.valid()) return Error::from_errno("restore: create", path.string());
  }
  if (auto s = sys(::chown(path.c_str(), owner, owner), "chown", path); !s) return s;
  return sys(::chmod(path.c_str(), mode), "chmod", path);
}

Status make_skeleton(const fs::path& stage, const RestoreSpec& spec) {
  const uid_t u = spec.uid_zero;
  for (const char* dir : {"upper", "work", "newroot", "dev", "dev/pts", "dev/shm"})
    if (auto s = make_owned(stage / dir, 0755, true, u); !s) return s;
  if (auto s = make_owned(stage / "empty", 0555, true, u); !s) return s;
  if (auto s = make_owned(stage / "shm", 01777, true, u); !s) return s;
  for (const char* name : kDevices)
    if (auto s = make_owned(stage / "dev" / name, 0644, false, u); !s) return s;
  for (auto [name, target] : kDevLinks) {
    const fs::path link = stage / "dev" / name;
    if (auto s = sys(::symlink(target, link.c_str()), "symlink", link); !s) return s;
    if (auto s = sys(::lchown(link.c_str(), u, u), "chown", link); !s) return s;
  }
  auto boot_id = read_file(spec.images / "boot_id");
  if (auto s = make_owned(stage / "boot_id", 0644, false, u); !s) return s;
  UniqueFd out(::open((stage / "boot_id").c_str(), O_WRONLY | O_CLOEXEC));
  if (!out.valid() || !boot_id) return Error::from_errno("restore: boot id", spec.images.string());
  if (auto s = write_all(out.get(), *boot_id, "restore: write", "boot_id"); !s) return s;
  return sys(::chmod((stage / "boot_id").c_str(), 0444), "chmod", "boot_id");
}

Status extract_upper(const fs::path& stage, const fs::path& images) {
  if (!fs::exists(images / "upper.tar")) return {};
  auto pid = spawn_helper("/usr/bin/tar",
                          {"tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-C",
                           (stage / "upper").string(), "-xpf", (images / "upper.tar").string()},
                          images / "untar.out");
  if (!pid) return pid.error();
  return wait_helper(*pid, "extract the writable layer", images / "untar.out");
}

// Each layer as init got it: an idmapped clone attached at layerN.
Result<std::string> attach_layers(const fs::path& stage, const RestoreSpec& spec) {
  std::string lower;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    std::string path = spec.layers[i].string();
    if (spec.translation >= 0) {
      const fs::path at = stage / ("layer" + std::to_string(i));
      if (auto s = make_owned(at, 0755, true, spec.uid_zero); !s) return s.error();
      auto tree = idmapped_tree(path, spec.translation, false);
      if (!tree) return tree.error();
      if (auto s = sys(::move_mount(tree->get(), "", AT_FDCWD, at.c_str(), MOVE_MOUNT_F_EMPTY_PATH),
                       "attach idmapped layer", at);
          !s)
        return s.error();
      path = at.string();
    }
    lower += (lower.empty() ? "" : ":") + path;
  }
  return lower;
}

struct Line {
  std::string key, kind, path;
};

std::vector<Line> read_lines(const fs::path& file) {
  std::vector<Line> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find('\t'), b = line.find('\t', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

// `--external mnt[KEY]:SOURCE` for each recorded mount: host sources through
// a bind under work/ext (traversable by sandbox root), staging ones on stage.
Result<std::vector<std::string>> mount_args(const RestoreSpec& spec) {
  std::vector<std::string> args;
  const fs::path ext = spec.work / "ext";
  if (auto s = sys(::mkdir(ext.c_str(), 0711), "mkdir", ext); !s) return s.error();
  size_t n = 0;
  for (const auto& m : read_lines(spec.images / "restore_mounts")) {
    fs::path source = spec.work / "stage" / fs::path(m.path).relative_path();
    if (m.kind == "host") {
      source = ext / std::to_string(n++);
      struct stat st {};
      if (::stat(m.path.c_str(), &st) != 0)
        return Error::from_errno("restore: a mount's source is gone", m.path);
      if (auto s = make_owned(source, 0755, S_ISDIR(st.st_mode), 0); !s) return s.error();
      if (auto s = sys(::mount(m.path.c_str(), source.c_str(), nullptr, MS_BIND, nullptr), "bind",
                       m.path);
          !s)
        return s.error();
    }
    args.push_back("--external");
    args.push_back("mnt[" + m.key + "]:" + source.string());
  }
  return args;
}

}  // namespace

Status build_stage(const RestoreSpec& spec) {
  const fs::path stage = spec.work / "stage";
  if (auto s = sys(::mkdir(stage.c_str(), 0755), "mkdir", stage); !s) return s;
  const uint64_t inodes = std::max(spec.disk_bytes / kBytesPerInode, kMinInodes);
  const std::string options =
      "size=" + std::to_string(spec.disk_bytes) + ",nr_inodes=" + std::to_string(inodes) +
      ",mode=0755,uid=" + std::to_string(spec.uid_zero) + ",gid=" + std::to_string(spec.uid_zero);
  if (auto s = sys(::mount("tmpfs", stage.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()),
                   "mount the staging tmpfs", stage);
      !s)
    return s;
  if (auto s = make_skeleton(stage, spec); !s) return s;
  if (auto s = extract_upper(stage, spec.images); !s) return s;
  auto lower = attach_layers(stage, spec);
  if (!lower) return lower.error();
  const std::string overlay = "lowerdir=" + *lower + ",upperdir=" + (stage / "upper").string() +
                              ",workdir=" + (stage / "work").string() + ",userxattr";
  return sys(::mount("overlay", (stage / "newroot").c_str(), "overlay", 0, overlay.c_str()),
             "mount the overlay root", overlay);
}

// Detached, never removed recursively: a bind still mounted here would lead
// a recursive removal into the host's own files.
void tear_down_stage(const fs::path& work) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(work / "ext", ec)) {
    ::umount2(entry.path().c_str(), MNT_DETACH);
    if (::unlink(entry.path().c_str()) != 0) ::rmdir(entry.path().c_str());
  }
  ::rmdir((work / "ext").c_str());
  ::umount2((work / "stage").c_str(), MNT_DETACH);
  ::rmdir((work / "stage").c_str());
  ::rmdir(work.c_str());
}

Result<pid_t> criu_restore(const RestoreSpec& spec) {
  if (auto s = build_stage(spec); !s) return s.error();
  auto externals = mount_args(spec);
  if (!externals) return externals.error();
  std::vector<std::string> args = {"sh",
                                   "-c",
                                   "read _ <&3 || exit 1; exec 3<&-; exec \"$@\"",
                                   "sh",
                                   "/usr/bin/unshare",
                                   "--cgroup",
                                   spec.criu.string(),
                                   "restore",
                                   "-D",
                                   spec.images.string(),
                                   "-o",
                                   "restore.log",
                                   "-v4",
                                   "-d",
                                   "--pidfile",
                                   (spec.images / "restored.pid").string(),
                                   "--root",
                                   (spec.work / "stage/newroot").string(),
                                   "--manage-cgroups=ignore",
                                   "--empty-ns",
                                   "net"};
  for (auto& a : *externals) args.push_back(std::move(a));
  // Our fds, above any number the helper gets, so no mapping clobbers another.
  std::vector<UniqueFd> held;
  std::vector<std::pair<int, int>> fds;
  auto hand = [&](int fd, const std::string& key) -> Status {
    UniqueFd high(::fcntl(fd, F_DUPFD_CLOEXEC, 100));
    if (!high.valid()) return Error::from_errno("restore: dup", key);
    const int theirs = kFirstInherited + static_cast<int>(fds.size());
    fds.emplace_back(high.get(), theirs);
    held.push_back(std::move(high));
    args.push_back("--inherit-fd");
    args.push_back("fd[" + std::to_string(theirs) + "]:" + key);
    return {};
  };
  for (const auto& f : read_lines(spec.images / "restore_files")) {
    const int flags = std::atoi(f.kind.c_str());
    const bool upper = f.path == kUpperPath;
    const fs::path path = upper ? spec.work / "stage/upper" : fs::path(f.path);
    UniqueFd opened(::open(path.c_str(), (upper ? O_PATH | O_DIRECTORY : flags) | O_CLOEXEC));
    if (!opened.valid()) return Error::from_errno("restore: open", path.string());
    // CRIU reopens an external file through /proc/self/fd/N as sandbox root,
    // who may not open host root's cgroup.procs for writing, and an O_PATH
    // reopen yields the magic link. Keyed by its restore-side name (the key
    // minus its first letter: files-reg.c) the fd is used as it is.
    const bool as_is = upper || (flags & O_PATH) || (flags & O_ACCMODE) == O_WRONLY;
    if (auto s = hand(opened.get(), as_is ? f.key.substr(1) : f.key); !s) return s.error();
  }
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return Error::from_errno("restore: pipe");
  UniqueFd gate_read(gate[0]), gate_write(gate[1]);
  fds.emplace_back(gate_read.get(), 3);
  const std::string binary = "/bin/sh";
  auto pid = spawn_helper(binary.c_str(), args, spec.images / "criu.out", fds);
  if (!pid) return pid.error();
  gate_read.reset();
  // Restored tasks are the helper's children: they start in its cgroups.
  Status joined = spec.join(*pid);
  if (joined) (void)write_all(gate_write.get(), "go\n", "restore: start", "helper");
  gate_write.reset();
  Status done = wait_helper(*pid, "criu restore", spec.images / "restore.log");
  if (!joined) return joined.error();
  if (!done) return done.error();
  auto restored = read_file(spec.images / "restored.pid");
  const pid_t init = restored ? std::atoi(restored->c_str()) : 0;
  if (init <= 0) return Error{"restore", EIO, "criu wrote no pid"};
  return init;
}

Status hand_listener(int pidfd, int listener) {
  UniqueFd pair(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, proto::kCheckpointHandFd, 0)));
  if (!pair.valid()) return Error::from_errno("restore: reach init's stand-in pair");
  return proto::send_message(pair.get(), "listener", {listener});
}

}  // namespace abx::runtime
