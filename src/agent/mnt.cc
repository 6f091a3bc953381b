#include "agent/mnt.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "common/unique_fd.h"
#include "runtime/root_paths.h"

namespace abx::agent::mnt {
namespace {

constexpr const char* kStaging = "/tmp";  // exists on every host; hidden by our tmpfs
constexpr const char* kOld = "/oldroot";
constexpr const char* kNew = "/newroot";
// Directories of the staging tmpfs bound into the sandbox instead of a tmpfs
// each: every superblock registers a memory-cgroup-aware shrinker, and the
// kernel gives every memory cgroup on the host a slot for every such shrinker,
// so kernel memory per sandbox grows with the number of sandboxes times the
// superblocks each one mounts.
constexpr const char* kStagedDev = "/dev";
constexpr const char* kStagedShm = "/shm";  // bound on /dev/shm: shares the disk's size
constexpr const char* kStagedEmpty = "/empty";
constexpr uint64_t kBytesPerInode = 8192;
constexpr uint64_t kMinInodes = 16384;
constexpr uid_t kUser = 1000;

// Host device nodes bound into the sandbox's /dev.
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};
// name → target of the /dev symlinks every program expects.
constexpr std::pair<const char*, const char*> kDevLinks[] = {
    {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
    {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"},
};
// Like OCI's maskedPaths and readonlyPaths: host information leaks and knobs.
constexpr const char* kMaskedProc[] = {"kcore",         "keys",        "timer_list", "sched_debug",
                                       "latency_stats", "timer_stats", "acpi",       "scsi"};
constexpr const char* kReadOnlyProc[] = {"sys", "sysrq-trigger", "bus", "fs", "irq"};

Status sys(int rc, const std::string& step, const std::string& detail = {}) {
  if (rc != 0) return Error::from_errno(step, detail);
  return {};
}

Status mount_fs(const char* type, const std::string& target, unsigned long flags,
                const std::string& options) {
  return sys(::mount(type, target.c_str(), type, flags, options.c_str()),
             std::string("mount ") + type, target);
}

Status make_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Error::from_errno("create mount point", path);
  ::close(fd);
  return {};
}

// A remount in a user namespace must keep the flags the kernel locked on the
// original mount (nosuid, nodev, noexec, atime): read them back and keep them.
unsigned long locked_flags(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return 0;
  unsigned long flags = 0;
  const std::pair<unsigned long, unsigned long> table[] = {
      {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},           {ST_NOEXEC, MS_NOEXEC},
      {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}};
  for (auto [st_flag, ms_flag] : table)
    if (st.f_flag & st_flag) flags |= ms_flag;
  return flags;
}

Status bind_mount(const std::string& source, const std::string& target, bool read_only) {
  if (auto s = sys(::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr),
                   "bind mount", source + " -> " + target);
      !s)
    return s;
  if (!read_only) return {};
  const unsigned long flags =
      MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | locked_flags(target);
  return sys(::mount(nullptr, target.c_str(), nullptr, flags, nullptr), "remount read-only",
             target);
}

// The new root, where the template's paths are resolved (see root_paths.h):
// until enter_root, a plain path call would follow the template's links from
// the staging root, where the host's "/" is /oldroot.
Result<UniqueFd> open_new_root() {
  UniqueFd root(::open(kNew, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root.valid()) return Error::from_errno("open new root");
  return root;
}

// Names the template path a failure was about: its links are the usual cause.
Error in_template(const std::string& path, const Error& error) {
  if (error.errnum == ELOOP)
    return Error{"template path " + path + " loops or leads through a /proc link", ELOOP, {}};
  return Error{"template path " + path, error.errnum, {}};
}

// Where the kernel's own trees go (/proc, /dev): a directory of the
// template, not a link, so that every later path through it stays on them.
Result<UniqueFd> make_kernel_dir(int root, const std::string& path, mode_t mode) {
  auto dir = runtime::root_paths::make(root, path, runtime::root_paths::Kind::kDirectory, mode,
                                       O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
  if (dir) return dir;
  if (dir.error().errnum == ELOOP)
    return Error{"template path " + path + " must be a directory, not a link", ELOOP, {}};
  return in_template(path, dir.error());
}

// Attaches the detached mount `tree` on the file or directory `target` is.
Status attach(int tree, int target, const std::string& what) {
  return sys(::move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH),
             "mount", what);
}

// A bind of the tree at `source` (with what is mounted below it) onto
// `target`, both fds; `attrs` (MOUNT_ATTR_*) set on its top mount, or on
// every mount of it with `recursive_attrs`.
Status bind_onto(int source, int target, uint64_t attrs, bool recursive_attrs,
                 const std::string& what) {
  UniqueFd tree(
      ::open_tree(source, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH));
  if (!tree.valid()) return Error::from_errno("bind mount", what);
  mount_attr attr{};
  attr.attr_set = attrs;
  const unsigned flags = AT_EMPTY_PATH | (recursive_attrs ? AT_RECURSIVE : 0);
  if (attrs != 0 && ::mount_setattr(tree.get(), "", flags, &attr, sizeof attr) != 0)
    return Error::from_errno("bind mount attributes", what);
  return attach(tree.get(), target, what);
}

// See proto::kWritableLayerFd. A tmpfs upper only: a build's host writable
// dir is the runtime's own already.
Status keep_writable_layer() {
  // The number must be free: dup3 would silently close what sits there.
  if (::fcntl(proto::kWritableLayerFd, F_GETFD) >= 0)
    return Error{"keep writable layer", EBUSY, "its fd number is taken"};
  const int fd = ::open("upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error::from_errno("open writable layer");
  const int kept = ::dup3(fd, proto::kWritableLayerFd, O_CLOEXEC);
  ::close(fd);
  if (kept < 0) return Error::from_errno("keep writable layer");
  return {};
}

// A boot id of the sandbox's own, new on every start (a VM's kernel makes
// one per boot; programs and E2B's tests tell reboots apart by it): a file
// of the staging tmpfs over /proc/sys/kernel/random/boot_id, read-only.
Status bind_boot_id() {
  char uuid[40] = {};
  const int in = ::open("/newroot/proc/sys/kernel/random/uuid", O_RDONLY | O_CLOEXEC);
  if (in < 0) return Error::from_errno("read a fresh uuid");
  const ssize_t n = ::read(in, uuid, sizeof uuid - 1);
  ::close(in);
  if (n <= 0) return Error::from_errno("read a fresh uuid");
  const int out = ::open("/boot_id", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (out < 0) return Error::from_errno("create boot id");
  const bool written = ::write(out, uuid, static_cast<size_t>(n)) == n;
  ::close(out);
  if (!written) return Error::from_errno("write boot id");
  return bind_mount("/boot_id", "/newroot/proc/sys/kernel/random/boot_id", true);
}

}  // namespace

Status make_private(const InitConfig&) {
  return sys(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "make mounts private");
}

// The staging tmpfs becomes the root, so host paths stay reachable (at
// /oldroot) for the overlay and binds while the sandbox's root is assembled.
Status stage(const InitConfig& config) {
  const uint64_t inodes = std::max(config.disk_bytes / kBytesPerInode, kMinInodes);
  const std::string options = "size=" + std::to_string(config.disk_bytes) +
                              ",nr_inodes=" + std::to_string(inodes) + ",mode=0755";
  if (auto s = mount_fs("tmpfs", kStaging, MS_NOSUID | MS_NODEV, options); !s) return s;
  if (auto s = sys(::chdir(kStaging), "chdir staging"); !s) return s;
  for (const char* dir : {"oldroot", "newroot", "upper", "work", "dev"})
    if (auto s = sys(::mkdir(dir, 0755), "mkdir staging", dir); !s) return s;
  if (auto s = sys(::mkdir("empty", 0555), "mkdir staging", "empty"); !s) return s;
  // mkdir's mode passes through the umask (022): chmod sets the 1777 every /dev/shm has.
  if (auto s = sys(::mkdir("shm", 0700), "mkdir staging", "shm"); !s) return s;
  if (auto s = sys(::chmod("shm", 01777), "chmod staging", "shm"); !s) return s;
  if (auto s = keep_writable_layer(); !s) return s;
  if (auto s =
          sys(static_cast<int>(::syscall(SYS_pivot_root, ".", "oldroot")), "pivot_root staging");
      !s)
    return s;
  return sys(::chdir("/"), "chdir /");
}

// The runtime opened each source for us; a lookup through the fd's magic
// link does not re-check the source's ancestors, which sandbox root may be
// unable to search (a data dir under /root).
std::string source_path(const InitConfig& config, size_t index) {
  return std::string(kOld) + "/proc/self/fd/" + std::to_string(config.source_fds.at(index));
}

// An idmapped source (a detached mount the runtime made) is attached on the
// staging tmpfs first: overlay takes layers only from mounts of this
// namespace. Otherwise the source's fd is named through /oldroot/proc.
Result<std::string> layer_path(const InitConfig& config, size_t index, const std::string& name) {
  if (!config.idmapped_layers) return source_path(config, index);
  const std::string path = "/" + name;
  if (auto s = sys(::mkdir(path.c_str(), 0755), "mkdir staging", name); !s) return s.error();
  if (auto s = sys(::move_mount(config.source_fds.at(index), "", AT_FDCWD, path.c_str(),
                                MOVE_MOUNT_F_EMPTY_PATH),
                   "attach idmapped layer", name);
      !s)
    return s.error();
  return path;
}

Status mount_overlay(const InitConfig& config) {
  std::string lower;
  for (size_t i = 0; i < config.lower_layers.size(); ++i) {
    auto path = layer_path(config, i, "layer" + std::to_string(i));
    if (!path) return path.error();
    if (!lower.empty()) lower += ':';
    lower += *path;
  }
  std::string writable = "/";
  if (config.host_writable_dir) {
    auto path = layer_path(config, config.lower_layers.size() + config.binds.size(), "writable");
    if (!path) return path.error();
    writable = *path + "/";
  }
  const std::string options =
      "lowerdir=" + lower + ",upperdir=" + writable + "upper,workdir=" + writable + "work";
  // user.overlay.* xattrs first: a user namespace cannot set trusted.* ones,
  // and layers captured by template builds carry user.overlay.opaque marks
  // that only a userxattr mount honours. Kernels before 5.11 lack the option.
  if (mount_fs("overlay", kNew, 0, options + ",userxattr")) return {};
  return mount_fs("overlay", kNew, 0, options);
}

// Each target is resolved inside the new root (a link the template put
// there is followed there) and the source's tree is bound on that very file.
Status bind_read_only(const InitConfig& config) {
  if (config.binds.empty()) return {};
  auto root = open_new_root();
  if (!root) return root.error();
  for (size_t i = 0; i < config.binds.size(); ++i) {
    const int source = config.source_fds.at(config.lower_layers.size() + i);
    const std::string& path = config.binds[i].second;
    struct stat st {};
    if (::fstat(source, &st) != 0) return Error::from_errno("stat bind source", path);
    const bool dir = S_ISDIR(st.st_mode);
    auto target = runtime::root_paths::make(
        root->get(), path,
        dir ? runtime::root_paths::Kind::kDirectory : runtime::root_paths::Kind::kFile,
        dir ? 0755 : 0644, O_PATH | (dir ? O_DIRECTORY : 0));
    if (!target) return in_template(path, target.error());
    const uint64_t read_only = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (auto s = bind_onto(source, target->get(), read_only, true, path); !s) return s;
  }
  return {};
}

// A volume's mount point is resolved inside the new root like a bind's (a
// template may make it a link: it is followed there, never to the host), and
// made a directory when missing. Its source is the runtime's idmapped clone
// (nosuid, nodev set by the runtime), attached as it is, or else an fd of the
// host dir, bound with those attributes.
Status mount_volumes(const InitConfig& config) {
  if (config.volumes.empty()) return {};
  auto root = open_new_root();
  if (!root) return root.error();
  for (size_t i = 0; i < config.volumes.size(); ++i) {
    const int source = config.source_fds.at(config.volumes_source() + i);
    const std::string& path = config.volumes[i];
    auto target = runtime::root_paths::make(
        root->get(), path, runtime::root_paths::Kind::kDirectory, 0755, O_PATH | O_DIRECTORY);
    if (!target) return in_template(path, target.error());
    // A link to the root ("/data -> /") would stack the volume over the
    // whole root: the sandbox would run from the volume's files, and init
    // make its /proc, /dev and /tmp in the team's volume.
    struct stat at {
    }, top{};
    if (::fstat(target->get(), &at) != 0 || ::fstat(root->get(), &top) != 0)
      return Error::from_errno("stat volume mount point", path);
    if (at.st_dev == top.st_dev && at.st_ino == top.st_ino)
      return Error{"template path " + path + " leads to the sandbox's root, where no volume goes",
                   ELOOP,
                   {}};
    const Status mounted =
        config.idmapped_layers
            ? attach(source, target->get(), path)
            : bind_onto(source, target->get(), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, path);
    if (!mounted) return mounted;
  }
  return {};
}

Status mount_proc(const InitConfig&) {
  auto root = open_new_root();
  if (!root) return root.error();
  auto target = make_kernel_dir(root->get(), "/proc", 0555);
  if (!target) return target.error();
  UniqueFd context(::fsopen("proc", FSOPEN_CLOEXEC));
  if (!context.valid()) return Error::from_errno("mount proc");
  if (::fsconfig(context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return Error::from_errno("mount proc");
  UniqueFd proc(::fsmount(context.get(), FSMOUNT_CLOEXEC,
                          MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  if (!proc.valid()) return Error::from_errno("mount proc");
  if (auto s = attach(proc.get(), target->get(), "/proc"); !s) return s;
  return bind_boot_id();
}

// lxcfs's files describe the reader's own cgroup. A view that cannot be
// bound (lxcfs gone) leaves the kernel's file: a create never fails for it.
Status bind_proc_views(const InitConfig& config) {
  if (config.proc_views.empty()) return {};
  const size_t index =
      config.lower_layers.size() + config.binds.size() + (config.host_writable_dir ? 1 : 0);
  const std::string source = source_path(config, index);
  for (const std::string& name : config.proc_views) {
    if (name.empty() || name.find('/') != std::string::npos) continue;
    (void)bind_mount(source + "/" + name, std::string(kNew) + "/proc/" + name, true);
  }
  return {};
}

// Assembled on the staging tmpfs (kStagedDev), then bound with all its
// mounts onto the template's /dev.
Status make_dev(const InitConfig& config) {
  const std::string dev = kStagedDev;
  for (const char* name : kDevices) {
    if (auto s = make_file(dev + "/" + name); !s) return s;
    if (auto s = bind_mount(std::string(kOld) + "/dev/" + name, dev + "/" + name, false); !s)
      return s;
  }
  if (auto s = sys(::mkdir((dev + "/pts").c_str(), 0755), "mkdir /dev/pts"); !s) return s;
  // gid 5 is `tty` in Debian; only usable when more than root is mapped.
  const std::string pts =
      std::string("newinstance,ptmxmode=0666,mode=0620") + (config.full_id_map ? ",gid=5" : "");
  if (auto s = mount_fs("devpts", dev + "/pts", MS_NOSUID | MS_NOEXEC, pts); !s) return s;
  // A directory of the staging tmpfs (kStagedShm), not a tmpfs of its own:
  // private to the sandbox, bounded by its disk size and charged to its
  // memory cgroup like its other files, one superblock fewer (see kStagedDev).
  // A bind of its own, so that it keeps exec (/dev's mount is noexec).
  if (auto s = sys(::mkdir((dev + "/shm").c_str(), 0755), "mkdir /dev/shm"); !s) return s;
  if (auto s = bind_mount(kStagedShm, dev + "/shm", false); !s) return s;
  for (auto [name, target] : kDevLinks)
    if (auto s = sys(::symlink(target, (dev + "/" + name).c_str()), "symlink /dev", name); !s)
      return s;
  UniqueFd staged(::open(kStagedDev, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!staged.valid()) return Error::from_errno("open staged /dev");
  auto root = open_new_root();
  if (!root) return root.error();
  auto target = make_kernel_dir(root->get(), "/dev", 0755);
  if (!target) return target.error();
  return bind_onto(staged.get(), target->get(), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false,
                   "/dev");
}

// Each made, changed or owned through an fd of what the path resolves to
// inside the new root: a template's "/tmp -> /oldroot/tmp/x" leads to the
// sandbox's own /oldroot/tmp/x, never to the host's.
Status make_standard_dirs(const InitConfig& config) {
  auto root = open_new_root();
  if (!root) return root.error();
  auto tmp = runtime::root_paths::make(root->get(), "/tmp", runtime::root_paths::Kind::kDirectory,
                                       01777, O_RDONLY | O_DIRECTORY);
  if (!tmp) return in_template("/tmp", tmp.error());
  struct stat st {};
  // A needless chmod would copy /tmp up into a build's captured layer.
  if (::fstat(tmp->get(), &st) != 0 || (st.st_mode & 07777) != 01777)
    if (auto s = sys(::fchmod(tmp->get(), 01777), "chmod /tmp"); !s) return s;
  auto home = runtime::root_paths::open(root->get(), "/home/user", O_PATH);
  if (home) return {};  // the template decided its owner
  if (home.error().errnum != ENOENT) return in_template("/home/user", home.error());
  auto made =
      runtime::root_paths::make(root->get(), "/home/user", runtime::root_paths::Kind::kDirectory,
                                0755, O_RDONLY | O_DIRECTORY);
  if (!made) return in_template("/home/user", made.error());
  if (!config.full_id_map) return {};
  return sys(::fchown(made->get(), kUser, kUser), "chown /home/user");
}

Status mask_proc(const InitConfig&) {
  const std::string proc = std::string(kNew) + "/proc/";
  const std::string null = std::string(kNew) + "/dev/null";
  for (const char* name : kMaskedProc) {
    struct stat st {};
    const std::string path = proc + name;
    if (::stat(path.c_str(), &st) != 0) continue;  // not on this kernel
    const Status masked =
        S_ISDIR(st.st_mode) ? bind_mount(kStagedEmpty, path, true) : bind_mount(null, path, false);
    if (!masked) return masked;
  }
  for (const char* name : kReadOnlyProc) {
    const std::string path = proc + name;
    if (::access(path.c_str(), F_OK) != 0) continue;
    if (auto s = bind_mount(path, path, true); !s) return s;
  }
  return {};
}

// They pin the host's mounts, which enter_root detaches.
Status close_sources(const InitConfig& config) {
  for (int fd : config.source_fds) ::close(fd);
  return {};
}

// pivot_root(".", ".") stacks the old root on top of the new one; detaching
// it drops the staging tmpfs and every host mount with it.
Status enter_root(const InitConfig&) {
  if (auto s = sys(::chdir(kNew), "chdir new root"); !s) return s;
  if (auto s = sys(static_cast<int>(::syscall(SYS_pivot_root, ".", ".")), "pivot_root"); !s)
    return s;
  if (auto s = sys(::umount2(".", MNT_DETACH), "detach old root"); !s) return s;
  return sys(::chdir("/"), "chdir /");
}

}  // namespace abx::agent::mnt
