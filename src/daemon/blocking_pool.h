// Threads for calls that block, so the few io threads never stall. Two lanes:
// short work (creates, kills, expiry, file operations, spawns) never waits
// behind long work whose length a caller controls (code executions, builds).
// Each lane starts no thread until work comes (an idle daemon holds none of
// them): see lazy_lane.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "daemon/http_exchange.h"
#include "daemon/lazy_lane.h"

namespace abx::daemon {

class BlockingPool {
 public:
  BlockingPool(size_t short_threads, size_t long_threads)
      : short_(short_threads), long_(long_threads) {}
  ~BlockingPool() { join(); }
  // Runs short `work`; the awaiting coroutine resumes on its own executor.
  http::Task<void> run(std::function<void()> work) { return short_.run(std::move(work)); }
  // Runs `work` that may take as long as its caller asks (run_code, builds).
  http::Task<void> run_long(std::function<void()> work) { return long_.run(std::move(work)); }
  // Runs short or long `work` without waiting for it.
  void post(std::function<void()> work) { short_.post(std::move(work)); }
  void post_long(std::function<void()> work) { long_.post(std::move(work)); }
  void join() {
    short_.join();
    long_.join();
  }
  // At shutdown: waits for the short lane, then up to `grace` for the long
  // one. False when long work (a run_code as long as its caller asked) is
  // still running: the caller then exits without waiting for it.
  bool join_within(std::chrono::milliseconds grace);

 private:
  LazyLane short_;
  LazyLane long_;
};

}  // namespace abx::daemon
