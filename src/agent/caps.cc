#include "agent/caps.h"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <algorithm>
#include <iterator>
#include <vector>

namespace abx::agent::caps {
namespace {

// Docker's default capability set.
constexpr cap_value_t kKept[] = {
    CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
    CAP_MKNOD,   CAP_NET_RAW,      CAP_SETGID,           CAP_SETUID,
    CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
    CAP_KILL,    CAP_AUDIT_WRITE,
};

cap_value_t withheld = -1;  // init is single-threaded: set once at start

bool kept(cap_value_t cap) {
  return cap != withheld && std::find(std::begin(kKept), std::end(kKept), cap) != std::end(kKept);
}

}  // namespace

void withhold(cap_value_t cap) { withheld = cap; }

Status restrict_for_user_process() {
  for (cap_value_t cap = 0; ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap)
    if (!kept(cap) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      return Error::from_errno("drop bounding capability", std::to_string(cap));
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    return Error::from_errno("clear ambient capabilities");
  // An exec as root gains (inheritable | bounding): empty the inheritable set.
  cap_t current = ::cap_get_proc();
  if (current == nullptr) return Error::from_errno("read capabilities");
  const bool cleared =
      ::cap_clear_flag(current, CAP_INHERITABLE) == 0 && ::cap_set_proc(current) == 0;
  const int saved = errno;
  ::cap_free(current);
  if (!cleared) return Error{"clear inheritable capabilities", saved, {}};
  return {};
}

Status keep_only_default_set() {
  if (auto s = restrict_for_user_process(); !s) return s;
  std::vector<cap_value_t> keep;
  std::copy_if(std::begin(kKept), std::end(kKept), std::back_inserter(keep), kept);
  const int count = static_cast<int>(keep.size());
  cap_t caps = ::cap_init();  // all clear
  if (caps == nullptr) return Error::from_errno("read capabilities");
  const bool set = ::cap_set_flag(caps, CAP_PERMITTED, count, keep.data(), CAP_SET) == 0 &&
                   ::cap_set_flag(caps, CAP_EFFECTIVE, count, keep.data(), CAP_SET) == 0 &&
                   ::cap_set_proc(caps) == 0;
  const int saved = errno;
  ::cap_free(caps);
  if (!set) return Error{"keep Docker's capabilities", saved, {}};
  return {};
}

}  // namespace abx::agent::caps
