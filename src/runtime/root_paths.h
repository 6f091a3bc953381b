// Paths of a root filesystem that a template (an image: hostile input)
// made, resolved inside it while init assembles the sandbox. Until init
// enters the new root, the host's "/" is reachable from where init stands, so
// a template's "/tmp -> /oldroot/home", "etc/resolv.conf -> ../../../x" or
// "/proc/self/root/..." followed by plain path calls would act on the host.
// Here every lookup is openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) from
// the root's fd: "/" and ".." stop at that root, /proc's magic links are
// refused, and what is made is made by *at() calls on a plain name in a
// directory resolved that way. Callers act on the returned fd, never on the
// path again.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx::runtime::root_paths {

enum class Kind { kDirectory, kFile };

// `path` (absolute or not, both from `root`) opened with `flags` (O_CLOEXEC
// added); `extra_resolve` adds RESOLVE_* flags (RESOLVE_NO_SYMLINKS for a
// path that must be what it says).
Result<UniqueFd> open(int root, const std::string& path, int flags, uint64_t extra_resolve = 0);

// Opens `path` as open() does, making what is missing first: the directories
// on the way (0755) and the last one as `kind` (`mode`, less the umask; an
// empty file for kFile). A symlink that points nowhere (yet) is followed as
// the kernel would, inside the root: what it names is made there. A symlink
// loop, a magic link or an existing entry of another kind is an error.
Result<UniqueFd> make(int root, const std::string& path, Kind kind, mode_t mode, int flags,
                      uint64_t extra_resolve = 0);

}  // namespace abx::runtime::root_paths
