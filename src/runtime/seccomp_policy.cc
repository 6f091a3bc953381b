#include "runtime/seccomp_policy.h"

#include <linux/netlink.h>
#include <linux/personality.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

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

// Socket families a sandbox may use: each is either confined to the
// sandbox's own network namespace or local to the host's memory. Every other
// family is refused as if the kernel lacked it (EAFNOSUPPORT): AF_VSOCK ports
// are shared with the host and its hypervisor whatever the namespace, and the
// rest (AF_ALG, AF_TIPC, AF_RDS, AF_CAN, AF_XDP, ...) are kernel code no
// agent needs. Docker's default profile denies AF_VSOCK alone.
//   AF_UNIX, AF_INET, AF_INET6: ordinary programs.
//   AF_NETLINK: `ip`, `ss`, glibc's getaddrinfo (per namespace); protocols below.
//   AF_PACKET: per namespace and needs CAP_NET_RAW there (ping, tcpdump on
//   the sandbox's own interfaces), as Docker allows.
constexpr int kAllowedSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET};
// Families are small numbers (AF_MAX is 46 on Linux 6.x); every value from
// here up is refused by one rule.
constexpr uint32_t kFirstUnlistedFamily = 64;

// Netlink protocols for routing (`ip`), socket diagnostics (`ss`), generic
// netlink (ethtool, nl80211 queries) and audit (login tools write to it and
// need CAP_AUDIT_WRITE). The rest (netfilter, xfrm, uevents, crypto, ...) are
// refused as an unknown protocol (EPROTONOSUPPORT).
constexpr int kAllowedNetlinkProtocols[] = {NETLINK_ROUTE, NETLINK_SOCK_DIAG, NETLINK_AUDIT,
                                            NETLINK_GENERIC};
constexpr uint32_t kNetlinkProtocolLimit = MAX_LINKS;

// personality(): the kernel takes a 32-bit value. Allowed: PER_LINUX (0)
// with any of PER_LINUX32's bit, UNAME26 and ADDR_NO_RANDOMIZE (gdb and
// `setarch -R` turn ASLR off for their own children; the kernel clears it on
// a set-id exec, and no_new_privs forbids those anyway), and the query
// 0xffffffff. Refused: every other bit (READ_IMPLIES_EXEC, MMAP_PAGE_ZERO,
// ADDR_COMPAT_LAYOUT, other execution domains), including bit 31 with any
// value but the query.
constexpr uint32_t kAllowedPersonalityBits =
    uint32_t{PER_LINUX32} | uint32_t{UNAME26} | uint32_t{ADDR_NO_RANDOMIZE};
constexpr uint32_t kPersonalityBit31 = 0x80000000;

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

bool is_allowed(int value, const int* begin, const int* end) {
  return std::find(begin, end, value) != end;
}

// The kernel reads these arguments as 32-bit ints and ignores the upper half
// of the register; a plain compare (even libseccomp's SCMP_CMP32, which only
// narrows the datum) sees all 64 bits, so a value with high bits set would
// slip past it. Every compare here masks to the low 32 bits.
constexpr uint64_t kLow32 = 0xffffffff;

scmp_arg_cmp low32_equals(unsigned arg, uint32_t value) {
  return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, kLow32, value};
}

// Comparisons matching a 32-bit value >= `limit` (a power of two): one per
// bit at or above it.
std::vector<scmp_arg_cmp> low32_at_least(unsigned arg, uint32_t limit) {
  std::vector<scmp_arg_cmp> out;
  for (uint64_t bit = limit; bit <= 0x80000000u; bit <<= 1)
    out.push_back(scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, bit, bit});
  return out;
}

// Refuses `family` values outside the allowlist for socket() and socketpair().
Status add_socket_family_rules(void* ctx) {
  static_assert((kFirstUnlistedFamily & (kFirstUnlistedFamily - 1)) == 0, "a power of two");
  const uint32_t action = SCMP_ACT_ERRNO(EAFNOSUPPORT);
  for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    std::vector<scmp_arg_cmp> denied = low32_at_least(0, kFirstUnlistedFamily);
    for (int family = 0; family < static_cast<int>(kFirstUnlistedFamily); ++family)
      if (!is_allowed(family, std::begin(kAllowedSocketFamilies), std::end(kAllowedSocketFamilies)))
        denied.push_back(low32_equals(0, static_cast<uint32_t>(family)));
    for (const scmp_arg_cmp& arg : denied)
      if (auto s = add(ctx, action, nr, "socket family", 1, &arg); !s) return s;
  }
  return {};
}

Status add_netlink_protocol_rules(void* ctx) {
  static_assert((kNetlinkProtocolLimit & (kNetlinkProtocolLimit - 1)) == 0, "a power of two");
  const uint32_t action = SCMP_ACT_ERRNO(EPROTONOSUPPORT);
  std::vector<scmp_arg_cmp> denied = low32_at_least(2, kNetlinkProtocolLimit);
  for (int protocol = 0; protocol < static_cast<int>(kNetlinkProtocolLimit); ++protocol)
    if (!is_allowed(protocol, std::begin(kAllowedNetlinkProtocols),
                    std::end(kAllowedNetlinkProtocols)))
      denied.push_back(low32_equals(2, static_cast<uint32_t>(protocol)));
  for (const scmp_arg_cmp& protocol : denied) {
    const scmp_arg_cmp args[] = {low32_equals(0, AF_NETLINK), protocol};
    if (auto s = add(ctx, action, SCMP_SYS(socket), "netlink protocol", 2, args); !s) return s;
  }
  return {};
}

// A value passes only if its bits are a subset of the allowed ones, or it is
// exactly the query. Each rule tests two bits under a 32-bit mask, so no
// value (nor anything in the register's upper half) slips between them.
Status add_personality_rules(void* ctx) {
  const uint32_t action = SCMP_ACT_ERRNO(EPERM);
  auto deny_when = [&](uint32_t mask, uint32_t datum) {
    const scmp_arg_cmp arg{0, SCMP_CMP_MASKED_EQ, mask, datum};
    return add(ctx, action, SCMP_SYS(personality), "personality", 1, &arg);
  };
  for (uint32_t bit = 1; bit != kPersonalityBit31; bit <<= 1) {
    // A bit outside the allowlist, without bit 31: not the query.
    if (!(bit & kAllowedPersonalityBits))
      if (auto s = deny_when(bit | kPersonalityBit31, bit); !s) return s;
    // Bit 31 with this bit clear: not the query either.
    if (auto s = deny_when(bit | kPersonalityBit31, kPersonalityBit31); !s) return s;
  }
  return {};
}

// prlimit64 changes another process's limits when its ids are the caller's,
// and init (PID 1) runs as sandbox root: root inside could set init's
// open-file limit to 3 (init then can no longer accept, so every request to
// the sandbox hangs) or its CPU-time hard limit to 1 s (the kernel enforces it
// with a SIGKILL even PID 1 cannot ignore). Refused for PID 1 when a new
// limit is given; reading init's limits, and setting any other process's,
// stay allowed.
Status add_init_limit_rules(void* ctx) {
  const scmp_arg_cmp args[] = {low32_equals(0, 1), scmp_arg_cmp{2, SCMP_CMP_NE, 0, 0}};
  return add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), "prlimit64", 2, args);
}

}  // namespace

Result<Filter> build() {
  Filter ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Error{"seccomp init", ENOMEM, {}};
  for (auto step :
       {add_denied_syscalls, add_namespace_rules, add_ioctl_rules, add_socket_family_rules,
        add_netlink_protocol_rules, add_personality_rules, add_init_limit_rules}) {
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
