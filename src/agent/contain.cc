#include "agent/contain.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "agent/mnt.h"
#include "agent/net.h"
#include "runtime/seccomp_policy.h"

namespace abx::agent {
namespace {

using proto::InitConfig;

// The parent attached us to the sandbox's cgroups before releasing us, so
// the new cgroup namespace is rooted there and hides the host's layout.
Status enter_cgroup_namespace(const InitConfig&) {
  if (::unshare(CLONE_NEWCGROUP) != 0) return Error::from_errno("unshare cgroup namespace");
  return {};
}

// Per-user kernel counts are checked at every user-namespace level: this
// namespace's own limit keeps one sandbox from taking the whole budget of the
// host uid its namespace is charged to (which all sandboxes share). Written
// before /proc/sys turns read-only, so sandbox root cannot raise them.
constexpr std::pair<const char*, const char*> kUserCounts[] = {
    {"max_inotify_instances", "64"},
    {"max_inotify_watches", "65536"},
    {"max_user_namespaces", "64"},
};

Status limit_user_counts(const InitConfig&) {
  for (auto [name, value] : kUserCounts) {
    const std::string path = std::string("/newroot/proc/sys/user/") + name;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;  // not on this kernel
    const ssize_t n = ::write(fd, value, std::strlen(value));
    ::close(fd);
    if (n < 0) return Error::from_errno("limit user counts", name);
  }
  return {};
}

// Sandbox processes (even root) may not read init's /proc entries: its fds
// include the control socket and every exit pipe.
Status make_undumpable(const InitConfig&) {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return Error::from_errno("prctl dumpable");
  return {};
}

// Init's no_new_privs is inherited by every process it forks (commands, file
// workers, opens) and none can clear it; only a template that opted in
// (InitConfig::allow_setid) goes without.
Status load_seccomp(const InitConfig& config) {
  return runtime::seccomp_policy::load(config.seccomp_bpf, !config.allow_setid);
}

using Step = Status (*)(const InitConfig&);

// The user, pid, ipc, uts and net namespaces were made by clone().
// clang-format off
constexpr Step kRecipe[] = {
    enter_cgroup_namespace,
    mnt::make_private,
    mnt::stage,
    mnt::mount_overlay,
    mnt::bind_read_only,
    mnt::mount_volumes,
    mnt::mount_proc,
    limit_user_counts,
    mnt::bind_proc_views,
    mnt::make_dev,
    mnt::make_standard_dirs,
    mnt::mask_proc,
    mnt::close_sources,
    mnt::enter_root,
    net::set_hostname,
    net::write_host_files,
    net::loopback_up,
    make_undumpable,
    load_seccomp,  // last: it forbids mount and friends
};
// clang-format on

}  // namespace

Status contain(const InitConfig& config) {
  for (Step step : kRecipe)
    if (auto s = step(config); !s) return s;
  return {};
}

}  // namespace abx::agent
