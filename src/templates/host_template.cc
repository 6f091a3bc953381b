#include "templates/host_template.h"

#include <sys/stat.h>

#include <string>

#include "templates/tree_ops.h"

namespace abx::templates::host {
namespace {

// Top-level dirs that hold programs and libraries. On a merged-/usr host they
// are symlinks into /usr and are mirrored as such; where one is a real
// directory it is bind-mounted read-only like /usr.
constexpr const char* kSystemDirs[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

struct Mountpoint {
  const char* path;
  mode_t mode;
};

// Empty dirs the runtime mounts over (usr, proc, dev, tmp) or that programs
// expect to exist. /tmp and /var/tmp are world-writable with the sticky bit.
constexpr Mountpoint kDirs[] = {
    {"usr", 0755},       {"proc", 0555}, {"dev", 0755}, {"tmp", 01777}, {"home", 0755},
    {"home/user", 0755}, {"root", 0700}, {"run", 0755}, {"var", 0755},  {"var/tmp", 01777},
    {"opt", 0755},       {"mnt", 0755},  {"etc", 0755},
};

// Names Debian leaves out of /usr/bin that users and agents type anyway.
struct CommandAlias {
  const char* name;
  const char* target;
};
constexpr CommandAlias kAliases[] = {{"python", "/usr/bin/python3"}, {"pip", "/usr/bin/pip3"}};

enum class HostDirKind { kAbsent, kSymlink, kDirectory };

HostDirKind host_dir_kind(const std::string& name, std::string* link_target) {
  const fs::path path = fs::path("/") / name;
  std::error_code ec;
  const auto status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return HostDirKind::kAbsent;
  if (fs::is_symlink(status)) {
    *link_target = fs::read_symlink(path, ec).string();
    return ec ? HostDirKind::kAbsent : HostDirKind::kSymlink;
  }
  return fs::is_directory(status) ? HostDirKind::kDirectory : HostDirKind::kAbsent;
}

Status make_system_dirs(const fs::path& rootfs) {
  for (const char* name : kSystemDirs) {
    std::string target;
    switch (host_dir_kind(name, &target)) {
      case HostDirKind::kSymlink:
        if (auto st = tree::make_symlink(target, rootfs / name); !st) return st;
        break;
      case HostDirKind::kDirectory:
        if (auto st = tree::make_dir(rootfs / name, 0755); !st) return st;
        break;
      case HostDirKind::kAbsent:
        break;
    }
  }
  return {};
}

// What the sandbox sees on /usr/local instead of the host's own (which holds
// host-installed tools the sandbox must not see).
Status make_usr_local(const fs::path& local) {
  for (const char* sub : {"", "bin", "lib", "sbin", "share"}) {
    if (auto st = tree::make_dir(local / sub, 0755); !st) return st;
  }
  for (const auto& alias : kAliases) {
    const fs::path host_command = fs::path("/usr/bin") / alias.name;
    if (fs::exists(host_command) || !fs::exists(alias.target)) continue;
    if (auto st = tree::make_symlink(alias.target, local / "bin" / alias.name); !st) return st;
  }
  return {};
}

Status make_rootfs(const fs::path& rootfs) {
  if (auto st = tree::make_dir(rootfs, 0755); !st) return st;
  for (const auto& dir : kDirs) {
    if (auto st = tree::make_dir(rootfs / dir.path, dir.mode); !st) return st;
  }
  if (auto st = make_system_dirs(rootfs); !st) return st;
  return write_etc(rootfs / "etc");
}

}  // namespace

Status build(const fs::path& dir, const Owners& owners) {
  if (auto st = tree::make_dir(dir, 0755); !st) return st;
  if (auto st = make_rootfs(dir / "rootfs"); !st) return st;
  if (auto st = make_usr_local(dir / "local"); !st) return st;
  if (auto st = tree::chown_tree(dir, owners.root_uid, owners.root_gid); !st) return st;
  return tree::chown_tree(dir / "rootfs/home/user", owners.user_uid, owners.user_gid);
}

runtime::RootfsSpec rootfs_spec(const fs::path& dir) {
  runtime::RootfsSpec spec;
  spec.lower_layers = {dir / "rootfs"};
  spec.read_only_binds.push_back({"/usr", "/usr"});
  for (const char* name : kSystemDirs) {
    std::string target;
    if (host_dir_kind(name, &target) == HostDirKind::kDirectory) {
      spec.read_only_binds.push_back({fs::path("/") / name, fs::path("/") / name});
    }
  }
  // After /usr: it lands on the /usr/local of that bind.
  spec.read_only_binds.push_back({dir / "local", "/usr/local"});
  return spec;
}

}  // namespace abx::templates::host
