#include "runtime/init/contain.h"

#include <sched.h>
#include <sys/prctl.h>

#include "runtime/init/mnt.h"
#include "runtime/init/net.h"
#include "runtime/seccomp_policy.h"

namespace abx::runtime::init {
namespace {

using proto::InitConfig;

// The parent attached us to the sandbox's cgroups before releasing us, so
// the new cgroup namespace is rooted there and hides the host's layout.
Status enter_cgroup_namespace(const InitConfig&) {
  if (::unshare(CLONE_NEWCGROUP) != 0) return Error::from_errno("unshare cgroup namespace");
  return {};
}

// Sandbox processes (even root) may not read init's /proc entries: its fds
// include the control socket and every exit pipe.
Status make_undumpable(const InitConfig&) {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return Error::from_errno("prctl dumpable");
  return {};
}

Status load_seccomp(const InitConfig& config) { return seccomp_policy::load(config.seccomp_bpf); }

using Step = Status (*)(const InitConfig&);

// The user, pid, ipc, uts and net namespaces were made by clone().
constexpr Step kRecipe[] = {
    enter_cgroup_namespace, mnt::make_private,     mnt::stage,
    mnt::mount_overlay,     mnt::bind_read_only,   mnt::mount_proc,
    mnt::bind_proc_views,   mnt::make_dev,         mnt::make_standard_dirs,
    mnt::mask_proc,         mnt::close_sources,    mnt::enter_root,
    net::set_hostname,      net::write_host_files, net::loopback_up,
    make_undumpable,
    load_seccomp,  // last: it forbids mount and friends
};

}  // namespace

Status contain(const InitConfig& config) {
  for (Step step : kRecipe)
    if (auto s = step(config); !s) return s;
  return {};
}

}  // namespace abx::runtime::init
