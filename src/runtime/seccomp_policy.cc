#include "runtime/seccomp_policy.h"

#include <linux/personality.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "common/unique_fd.h"

namespace abx::runtime::seccomp_policy {
namespace {

// Kernel interfaces a sandbox never needs and that widen the attack surface
// (Docker's default profile denies the same): EPERM.
constexpr const char* kDeniedSyscalls[] = {
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "swapon",
    "swapoff",
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "acct",
    "settimeofday",
    "stime",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "open_by_handle_at",
    "name_to_handle_at",
    "iopl",
    "ioperm",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "setns",
    "unshare",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "mbind",
    "set_mempolicy",
    "get_mempolicy",
    "move_pages",
    "migrate_pages",
    "nfsservctl",
    "vm86",
    "vm86old",
    "uselib",
    "_sysctl",
    "sysfs",
    "ustat",
    "syslog",
    "vhangup",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "pciconfig_read",
    "pciconfig_write",
    "fanotify_init",
    "landlock_create_ruleset",
    "pidfd_getfd",
    "process_madvise",
};

// clone() creating any namespace would reopen the kernel surface the user
// namespace exposes (nf_tables, overlayfs, ...).
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWUSER,   CLONE_NEWNS,  CLONE_NEWPID,
                                        CLONE_NEWNET,    CLONE_NEWIPC, CLONE_NEWUTS,
                                        CLONE_NEWCGROUP, CLONE_NEWTIME};

// TIOCSTI/TIOCLINUX inject input into a terminal (bubblewrap CVE-2017-5226).
constexpr uint64_t kDeniedIoctls[] = {TIOCSTI, TIOCLINUX};

// personality() bits that weaken ASLR or W^X; other values (including the
// 0xffffffff query) stay allowed.
constexpr uint64_t kDeniedPersonalityBits[] = {ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC,
                                               ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO};
// No personality flag uses bit 31, but the query 0xffffffff sets it: a rule
// requiring it clear matches every real request and never the query.
constexpr uint64_t kPersonalityQueryBit = 0x80000000;

Status add(void* ctx, uint32_t action, int nr, const char* what, unsigned count,
           const scmp_arg_cmp* args) {
  const int rc = seccomp_rule_add_array(ctx, action, nr, count, args);
  if (rc < 0) return Error{"seccomp rule", -rc, what};
  return {};
}

Status add_denied_syscalls(void* ctx) {
  for (const char* name : kDeniedSyscalls) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (auto s = add(ctx, SCMP_ACT_ERRNO(EPERM), nr, name, 0, nullptr); !s) return s;
  }
  return {};
}

Status add_namespace_rules(void* ctx) {
  for (uint64_t flag : kNamespaceFlags) {
    const scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    if (auto s = add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), "clone", 1, &arg); !s) return s;
  }
  // clone3 passes flags in memory a filter cannot read: make glibc fall back to clone.
  return add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), "clone3", 0, nullptr);
}

Status add_ioctl_rules(void* ctx) {
  for (uint64_t request : kDeniedIoctls) {
    const scmp_arg_cmp arg = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request);
    if (auto s = add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), "ioctl", 1, &arg); !s) return s;
  }
  return {};
}

Status add_personality_rules(void* ctx) {
  for (uint64_t bit : kDeniedPersonalityBits) {
    const scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, bit | kPersonalityQueryBit, bit);
    if (auto s = add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), "personality", 1, &arg); !s)
      return s;
  }
  return {};
}

}  // namespace

Result<Filter> build() {
  Filter ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error{"seccomp init", ENOMEM, {}};
  for (auto step :
       {add_denied_syscalls, add_namespace_rules, add_ioctl_rules, add_personality_rules}) {
    if (auto s = step(ctx.get()); !s) return s.error();
  }
  return ctx;
}

Result<std::string> compile() {
  auto filter = build();
  if (!filter) return filter.error();
  UniqueFd out(::memfd_create("abx-seccomp", MFD_CLOEXEC));
  if (!out.valid()) return Error::from_errno("memfd_create seccomp");
  if (const int rc = seccomp_export_bpf(filter->get(), out.get()); rc < 0)
    return Error{"seccomp export", -rc, {}};
  const off_t size = ::lseek(out.get(), 0, SEEK_END);
  std::string bpf(static_cast<size_t>(std::max<off_t>(size, 0)), '\0');
  if (size <= 0 || ::pread(out.get(), bpf.data(), bpf.size(), 0) != size)
    return Error::from_errno("read compiled seccomp filter");
  return bpf;
}

}  // namespace abx::runtime::seccomp_policy
