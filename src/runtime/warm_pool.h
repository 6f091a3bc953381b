// Pre-created sandboxes, so that a create with a runtime-chosen id costs a
// map lookup. One small pool per distinct spec (rootfs, limits, hostname):
// a spec enters the pool on its first take, and every take is refilled by a
// background thread. Pooled sandboxes are ordinary sandboxes that no caller
// knows yet: they die with the pool, and after a daemon SIGKILL they are
// swept as orphans.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::runtime {

class WarmPool {
 public:
  using Make = std::function<Result<std::unique_ptr<Sandbox>>(const SandboxSpec&)>;
  using Discard = std::function<void(const SandboxRecord&)>;

  // `make` creates a sandbox for a spec with its id set; `discard` destroys
  // one. Both are called from the pool's thread (and from drain()).
  WarmPool(size_t per_spec, Make make, Discard discard);
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // A ready sandbox made from `spec` (whose id is ignored), or nullptr; in
  // both cases the spec's pool is refilled in the background.
  std::unique_ptr<Sandbox> take(const SandboxSpec& spec);

  // Ids of pooled sandboxes and of those being made (not orphans).
  std::vector<std::string> ids() const;

  // Destroys every pooled sandbox (and any being made now) but keeps
  // refilling on later takes: their templates may have changed.
  void clear();

  // Stops refilling and destroys every pooled sandbox.
  void drain();

 private:
  struct Shelf {
    SandboxSpec spec;  // id empty
    std::vector<std::unique_ptr<Sandbox>> ready;
    bool refill = false;  // set by a take, cleared when full or when making failed
  };

  void run();
  Shelf* next_to_fill();

  const size_t per_spec_;
  Make make_;
  Discard discard_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Shelf> shelves_;  // by spec key
  std::set<std::string> making_;          // ids being created right now
  bool stopping_ = false;
  uint64_t generation_ = 0;  // bumped by clear(): sandboxes made before it are discarded
  std::thread thread_;       // last: starts once the rest exists
};

}  // namespace abx::runtime
