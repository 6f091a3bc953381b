// One lane of the blocking pool: an asio thread pool with no threads of its
// own that gains an attached thread whenever its work, running and queued,
// outnumbers its threads, up to `most`; they stay once started. An idle lane
// (a daemon nobody uses) holds none.
#pragma once

#include <atomic>
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

class LazyLane {
 public:
  explicit LazyLane(size_t most);
  ~LazyLane();
  // Runs `work`; the awaiting coroutine resumes on its own executor.
  http::Task<void> run(std::function<void()> work);
  void post(std::function<void()> work);
  size_t running() const { return running_.load(); }
  // Lets the threads return once the lane's work is done, then joins them.
  void join();

 private:
  std::function<void()> counted(std::function<void()> work);
  void grow();

  std::atomic<size_t> running_{0};
  std::unique_ptr<boost::asio::thread_pool> pool_;  // no threads of its own: threads_
  size_t most_;
  std::mutex mutex_;
  std::vector<std::thread> threads_;  // each attached to pool_
  bool joined_ = false;
};

}  // namespace abx::daemon
