#include "agent/open_file.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace abx::agent {
namespace {

// openat2 may fail with EAGAIN when a rename races a RESOLVE_IN_ROOT lookup.
constexpr int kOpenat2Retries = 8;

// Init's filesystem ids and groups become a sandbox user's for the life of
// this object; every path out restores root's. Init is single-threaded, so
// nothing else runs with the borrowed ids. Setting the fsuid away from 0
// drops init's file capabilities; setting it back raises them again.
class ActingAs {
 public:
  ActingAs(uid_t uid, gid_t gid) {
    if (uid == 0 && gid == 0) {  // init is root already (and may not setgroups rootless)
      ok_ = true;
      return;
    }
    switched_ = true;  // from here on the destructor restores
    if (::setgroups(1, &gid) != 0) return;
    ::setfsgid(gid);
    ::setfsuid(uid);
    // setfsuid/setfsgid report the old id whether or not they succeeded:
    // ask again to know.
    ok_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) == uid &&
          static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) == gid;
  }
  // Back to no supplementary groups: init needs none, and any it inherited
  // were the host's (unmapped here, so they could not be set again anyway).
  ~ActingAs() {
    if (!switched_) return;
    ::setfsuid(0);
    ::setfsgid(0);
    (void)::setgroups(0, nullptr);
  }
  ActingAs(const ActingAs&) = delete;
  ActingAs& operator=(const ActingAs&) = delete;
  bool ok() const { return ok_; }

 private:
  bool switched_ = false;
  bool ok_ = false;
};

// O_NONBLOCK: a FIFO swapped in after any check cannot block init; opening
// as the user, anything the open itself might do the user could do anyway.
Result<UniqueFd> open_in_root(const std::string& path) {
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Error::from_errno("open /");
  open_how how{};
  how.flags = O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, root.get(), path.c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != EAGAIN || attempt == kOpenat2Retries) return Error::from_errno("open", path);
  }
}

}  // namespace

Result<UniqueFd> open_for_reading(const proto::OpenRequest& request, bool full_id_map) {
  if (request.path.empty() || request.path.front() != '/')
    return Error{"open: path must be absolute", EINVAL, request.path};
  const uid_t uid = full_id_map ? request.uid : 0;
  const gid_t gid = full_id_map ? request.gid : 0;
  const ActingAs user(uid, gid);
  if (!user.ok()) return Error{"act as uid " + std::to_string(uid), EPERM, request.path};
  auto fd = open_in_root(request.path);
  if (!fd) return fd.error();
  if (auto s = proto::check_readable_file(fd->get(), request.path); !s) return s.error();
  if (::fcntl(fd->get(), F_SETFL, 0) != 0) return Error::from_errno("open", request.path);
  return fd;
}

}  // namespace abx::agent
