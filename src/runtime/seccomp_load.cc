// Loading the compiled seccomp filter: raw syscalls, no libseccomp, so abx-init
// stays small. Compiled into abx-init and abx_runtime.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "runtime/seccomp_policy.h"

namespace abx::runtime::seccomp_policy {

Status load(const std::string& bpf, bool no_new_privs) {
  if (bpf.empty() || bpf.size() % sizeof(sock_filter) != 0 ||
      bpf.size() / sizeof(sock_filter) > BPF_MAXINSNS)
    return Error{"seccomp load", EINVAL, "malformed compiled filter"};
  std::vector<sock_filter> program(bpf.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bpf.data(), bpf.size());
  const sock_fprog fprog{static_cast<unsigned short>(program.size()), program.data()};
  if (no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return Error::from_errno("no_new_privs");
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0)
    return Error::from_errno("seccomp load");
  return {};
}

}  // namespace abx::runtime::seccomp_policy
