// Threads for calls that block, so the few io threads never stall. Two lanes:
// short work (creates, kills, expiry, file operations, spawns) never waits
// behind long work whose length a caller controls (code executions, builds).
// The long lane starts no thread until work comes (an idle daemon holds none
// of them): it gains one whenever its work, running and queued, outnumbers its
// threads, up to its size; they stay once started.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/http_exchange.h"

namespace boost::asio {
class thread_pool;
}

namespace abx::daemon {

class BlockingPool {
 public:
  BlockingPool(size_t short_threads, size_t long_threads);
  ~BlockingPool();
  // Runs short `work`; the awaiting coroutine resumes on its own executor.
  http::Task<void> run(std::function<void()> work);
  // Runs `work` that may take as long as its caller asks (run_code, builds).
  http::Task<void> run_long(std::function<void()> work);
  // Runs short or long `work` without waiting for it.
  void post(std::function<void()> work);
  void post_long(std::function<void()> work);
  void join();
  // At shutdown: waits for the short lane, then up to `grace` for the long
  // one. False when long work (a run_code as long as its caller asked) is
  // still running: the caller then exits without waiting for it.
  bool join_within(std::chrono::milliseconds grace);

 private:
  std::function<void()> counted_long(std::function<void()> work);
  void grow_long();
  void join_long();

  std::atomic<size_t> long_running_{0};
  std::unique_ptr<boost::asio::thread_pool> short_;
  std::unique_ptr<boost::asio::thread_pool> long_;  // no threads of its own: long_threads_
  size_t long_max_;
  std::mutex long_mutex_;
  std::vector<std::thread> long_threads_;  // each attached to long_
  bool long_joined_ = false;
};

}  // namespace abx::daemon
