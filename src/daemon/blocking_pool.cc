#include "daemon/blocking_pool.h"

#include <thread>

namespace abx::daemon {

bool BlockingPool::join_within(std::chrono::milliseconds grace) {
  short_.join();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (long_.running() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  long_.join();
  return true;
}

}  // namespace abx::daemon
