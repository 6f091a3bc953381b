// Checkpoints of a sandbox's processes to disk with CRIU (issue 33,
// docs/design/criu-checkpoint.md): whether this host can take them. Without
// them, pause stays freeze-only and the daemon says why, in one line.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::runtime {

struct CheckpointSupport {
  bool available = false;
  std::string reason;          // why not, one line; empty when available
  std::filesystem::path criu;  // the binary found, when one was
};

// What the probe saw, so the verdict (checkpoint_verdict) is a pure function.
struct CheckpointFacts {
  std::optional<std::filesystem::path> criu;  // nullopt: none found
  bool root = false;                          // the daemon's euid is 0
  std::optional<std::string> check_failure;   // `criu check`'s last error line, if it failed
  bool cap_sys_resource = false;              // in the daemon's effective set
  // The runtime makes sandboxes' user namespaces owned by host root
  // (RuntimeConfig::checkpoints), which gives root every capability in them.
  bool root_owned_userns = false;
};
CheckpointSupport checkpoint_verdict(const CheckpointFacts& facts);

// The criu binary: $ABX_CRIU, else the first of PATH, /usr/local/sbin,
// /usr/sbin, /sbin that is executable (a daemon's PATH often lacks sbin).
std::optional<std::filesystem::path> find_criu();

// Finds criu and runs `criu check` (about 0.1 s; its log goes to `log`).
CheckpointSupport probe_checkpoint(const std::filesystem::path& log, bool root_owned_userns);

// CRIU's `--external mnt[MOUNTPOINT]:KEY` arguments (two each) for a
// sandbox's mount table (its init's /proc/PID/mountinfo): every mount CRIU
// cannot make again by itself, i.e. a bind (its root is not its
// filesystem's), or a whole filesystem other than tmpfs, devpts, mqueue,
// sysfs and the sandbox's own proc (host dirs, lxcfs views, device nodes,
// the staging tmpfs's dirs, the host's proc files lxcfs stands in for). The
// root mount is the restore's --root. KEY is "m<mount id>".
std::vector<std::string> mount_externals(const std::string& mountinfo);

// CRIU's `--external file[MNT:INODE]` arguments for the files the sandbox's
// processes hold on mounts outside its mount namespace (init's /dev/null
// stdio, the workload cgroup.procs, the writable layer's O_PATH fd, init's
// executable in the state dir), from every process under `init`.
Result<std::vector<std::string>> file_externals(pid_t init, const std::string& mountinfo);

// Where a restore finds again what each external mount key was
// (docs/design/criu-checkpoint.md, item 7): a host path (a bind of a host
// dir or file, an lxcfs view, a device node), found by the mount's device
// and root among `host_mountinfo`'s (the daemon's); else a path of the
// sandbox's staging tmpfs, which no host mount shows. Pure.
struct MountSource {
  std::string key;         // "m<mount id>"
  std::string host;        // empty: on the staging tmpfs
  std::string stage_root;  // the mount's root on the staging tmpfs
};
std::vector<MountSource> mount_sources(const std::string& mountinfo,
                                       const std::string& host_mountinfo);

// A file the sandbox holds on a mount outside it, and how to open it again.
struct FileSource {
  std::string key;   // "file[MNT:INODE]"
  std::string path;  // the host path; kUpperPath: the writable layer
  int flags = 0;     // O_ACCMODE and O_PATH of the fd
};
inline constexpr const char* kUpperPath = "@upper";
Result<std::vector<FileSource>> file_sources(pid_t init, const std::string& mountinfo);

// The records a restore reads beside the images (restore_sources.*, and
// boot_id) for the tree under `init`: written before the dump.
Status record_restore_sources(pid_t init, const std::string& mountinfo,
                              const std::filesystem::path& images);

// `criu dump` of the tree under `init` into `images` (which exists): its
// processes end. The log is images/dump.log; an error names CRIU's last
// "Error" line.
Status criu_dump(const std::filesystem::path& criu, pid_t init,
                 const std::filesystem::path& images);

}  // namespace abx::runtime
