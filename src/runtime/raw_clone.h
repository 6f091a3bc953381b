// clone(2) for children that share the daemon's memory (CLONE_VM): the
// sandbox's init before its exec (spawner.cc) and the short-lived holder of a
// new user namespace (user.cc). Such a child runs on a small stack of its
// own and shares the calling thread's thread-local storage, so its code must
// neither be instrumented by a sanitizer nor enter a libc function one
// intercepts: raw syscalls only, on memory the parent filled in.
#pragma once

#include <dlfcn.h>
#include <sched.h>

namespace abx::runtime {

#define ABX_CHILD_CODE __attribute__((no_sanitize("address,thread,undefined")))

using CloneFn = int (*)(int (*)(void*), void*, int, void*, ...);

// ThreadSanitizer intercepts clone() and treats its child like a fork's, which
// with CLONE_VM rewrites the parent's own sanitizer state (the parent then dies
// "starting new threads after multi-threaded fork"): call libc's clone.
inline CloneFn libc_clone() {
#if defined(__SANITIZE_THREAD__)
  static const CloneFn real = [] {
    void* libc = ::dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void* symbol = libc != nullptr ? ::dlsym(libc, "clone") : nullptr;
    return symbol != nullptr ? reinterpret_cast<CloneFn>(symbol) : &::clone;
  }();
  return real;
#else
  return &::clone;
#endif
}

}  // namespace abx::runtime
