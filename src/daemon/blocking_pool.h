// Threads for calls that block (runtime create/destroy, spawn, interpreter
// execute), so the few io threads never stall.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "daemon/http_exchange.h"

namespace boost::asio {
class thread_pool;
}

namespace abx::daemon {

class BlockingPool {
 public:
  explicit BlockingPool(size_t threads);
  ~BlockingPool();
  // Runs `work` on the pool; the awaiting coroutine resumes on its own executor.
  http::Task<void> run(std::function<void()> work);
  // Runs `work` on the pool without waiting for it.
  void post(std::function<void()> work);
  void join();

 private:
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

}  // namespace abx::daemon
