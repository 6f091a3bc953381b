#include "runtime/loop_image.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "runtime/helper_spawn.h"

namespace abx::runtime::loop_image {
namespace {

namespace fs = std::filesystem;

// ext4's online resize (linux/fs/ext4/ext4.h; not in the uapi headers).
constexpr unsigned long kExt4ResizeFs = _IOW('f', 16, uint64_t);
constexpr int kLoopMajor = 7;
constexpr uint64_t kBigVolume = uint64_t{16} << 30;

// An e2fsprogs program: "mkfs.ext4", "e2fsck", "resize2fs".
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/"})
    if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
  return "";
}

std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Runs an e2fsprogs program on `image` to its end; its last line on an exit
// code above `worst_ok` (e2fsck's 1 and 2 say it fixed something).
Status run_tool(const std::string& name, std::vector<std::string> args, const fs::path& image,
                int worst_ok = 0) {
  const std::string binary = tool(name);
  if (binary.empty()) return Error{name + " (e2fsprogs) not installed", ENOENT, image.string()};
  args.insert(args.begin(), name);
  const fs::path log = image.string() + "." + name + ".log";
  auto pid = spawn_helper(binary.c_str(), args, log);
  if (!pid) return pid.error();
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string why = last_line(log);
  std::error_code ec;
  fs::remove(log, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) > worst_ok)
    return Error{name + " failed: " + why, EIO, image.string()};
  return {};
}

// The loop device already attached to the file (dev, ino), or -1. A daemon
// that restarted while a sandbox still binds a volume finds it here.
int attached_loop(dev_t dev, ino_t ino) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("loop") || !fs::exists(entry.path() / "loop" / "backing_file", ec))
      continue;
    UniqueFd loop(::open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    loop_info64 info{};
    if (!loop.valid() || ::ioctl(loop.get(), LOOP_GET_STATUS64, &info) != 0) continue;
    if (info.lo_device == dev && info.lo_inode == ino) return std::stoi(name.substr(4));
  }
  return -1;
}

// A free loop device bound to `file`, detaching itself at its last close:
// its number, with the device held open (until the mount holds it).
Result<std::pair<int, UniqueFd>> attach(int file, const fs::path& image) {
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control.valid()) return Error::from_errno("open /dev/loop-control", image.string());
  // Another process may take the free device between the two calls: retried.
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Error::from_errno("find a free loop device", image.string());
    const std::string device = "/dev/loop" + std::to_string(n);
    UniqueFd loop(::open(device.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop.valid()) return Error::from_errno("open " + device, image.string());
    loop_config config{};
    config.fd = static_cast<uint32_t>(file);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), image.c_str(),
                 LO_NAME_SIZE - 1);
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return std::pair{n, std::move(loop)};
    if (errno != EBUSY) return Error::from_errno("attach " + device, image.string());
  }
  return Error{"attach a loop device", EBUSY, image.string()};
}

}  // namespace

std::string unavailable_reason() {
  if (::geteuid() != 0) return "the daemon is not root";
  if (::access("/dev/loop-control", R_OK | W_OK) != 0) return "no /dev/loop-control";
  if (tool("mkfs.ext4").empty()) return "no mkfs.ext4 (e2fsprogs)";
  return "";
}

Status make_ext4(const fs::path& image, uint64_t bytes, uid_t uid, gid_t gid) {
  {
    UniqueFd file(::open(image.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!file.valid()) return Error::from_errno("create volume image", image.string());
    if (::ftruncate(file.get(), static_cast<off_t>(bytes)) != 0)
      return Error::from_errno("size volume image", image.string());
  }
  std::vector<std::string> args = {
      "-q", "-F", "-m", "0", "-E", "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid)};
  // The default journal of a large filesystem is up to 1 GB of real disk.
  if (bytes >= kBigVolume) args.insert(args.end(), {"-J", "size=64"});
  args.push_back(image.string());
  return run_tool("mkfs.ext4", args, image);
}

bool is_mount_point(const fs::path& dir) {
  struct stat self {
  }, parent{};
  if (::lstat(dir.c_str(), &self) != 0 || ::lstat(dir.parent_path().c_str(), &parent) != 0)
    return false;
  return S_ISDIR(self.st_mode) && self.st_dev != parent.st_dev;
}

Status mount(const fs::path& image, const fs::path& target) {
  if (is_mount_point(target)) return {};
  UniqueFd file(::open(image.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!file.valid() || ::fstat(file.get(), &st) != 0)
    return Error::from_errno("open volume image", image.string());
  int n = attached_loop(st.st_dev, st.st_ino);
  UniqueFd held;  // the new device, open until the mount holds it
  if (n < 0) {
    auto attached = attach(file.get(), image);
    if (!attached) return attached.error();
    n = attached->first;
    held = std::move(attached->second);
  }
  const std::string device = "/dev/loop" + std::to_string(n);
  if (::mount(device.c_str(), target.c_str(), "ext4", MS_NOSUID | MS_NODEV, nullptr) != 0)
    return Error::from_errno("mount " + device, target.string());
  return {};
}

Status unmount(const fs::path& target) {
  if (!is_mount_point(target)) return {};
  if (::umount2(target.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
    return Error::from_errno("unmount volume", target.string());
  return {};
}

namespace {

// Online resize needs CAP_SYS_RESOURCE, which a daemon in a container may
// lack: then the image grows unmounted, if nothing else holds it (a
// sandbox's bind keeps its loop device, and the volume waits for it to go).
Status grow_offline(const fs::path& image, const fs::path& target, uint64_t bytes) {
  if (Status s = unmount(target); !s) return s;
  struct stat st {};
  if (::stat(image.c_str(), &st) != 0) return Error::from_errno("stat", image.string());
  // The loop device detaches at its last close; a moment's grace for that.
  for (int i = 0; i < 20 && attached_loop(st.st_dev, st.st_ino) >= 0; ++i) ::usleep(50'000);
  Status grown = attached_loop(st.st_dev, st.st_ino) >= 0
                     ? Status(Error{"volume image in use: it grows when no sandbox mounts it",
                                    EBUSY, image.string()})
                     : run_tool("e2fsck", {"-f", "-p", image.string()}, image, 2);
  if (grown)
    grown = run_tool("resize2fs", {image.string(), std::to_string(bytes >> 10) + "K"}, image);
  if (Status s = mount(image, target); !s) return s;
  return grown;
}

}  // namespace

// The image file's size is the filesystem's: a grow that fails puts it back,
// so the next one tries again.
Status grow(const fs::path& image, const fs::path& target, uint64_t bytes) {
  struct stat img {
  }, root{};
  if (::stat(image.c_str(), &img) != 0) return Error::from_errno("stat", image.string());
  if (static_cast<uint64_t>(img.st_size) >= bytes) return {};
  Status grown = Error{"grow volume", EIO, image.string()};
  {
    UniqueFd dir(::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct statfs sfs {};
    if (!dir.valid() || ::fstat(dir.get(), &root) != 0 || ::fstatfs(dir.get(), &sfs) != 0)
      return Error::from_errno("open volume", target.string());
    if (major(root.st_dev) != kLoopMajor || sfs.f_bsize <= 0)
      return Error{"volume is not mounted from its image", EINVAL, target.string()};
    const std::string device = "/dev/loop" + std::to_string(minor(root.st_dev));
    UniqueFd loop(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
    uint64_t blocks = bytes / static_cast<uint64_t>(sfs.f_bsize);
    if (::truncate(image.c_str(), static_cast<off_t>(bytes)) != 0)
      return Error::from_errno("grow volume image", image.string());
    if (!loop.valid() || ::ioctl(loop.get(), LOOP_SET_CAPACITY, 0) != 0)
      grown = Error::from_errno("grow " + device, image.string());
    else if (::ioctl(dir.get(), kExt4ResizeFs, &blocks) == 0)
      return {};
    else
      grown = Error::from_errno("grow volume filesystem", target.string());
  }  // both closed: an unmounted image's loop device detaches
  if (grown.error().errnum == EPERM) grown = grow_offline(image, target, bytes);
  // A loop device left larger than its file is harmless: ext4 keeps to its
  // own block count.
  if (!grown) (void)::truncate(image.c_str(), img.st_size);
  return grown;
}

}  // namespace abx::runtime::loop_image
