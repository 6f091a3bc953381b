#include "daemon/blocking_pool.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <thread>

namespace abx::daemon {

namespace net = boost::asio;

BlockingPool::BlockingPool(size_t short_threads, size_t long_threads)
    : short_(std::make_unique<net::thread_pool>(short_threads)),
      long_(std::make_unique<net::thread_pool>(long_threads)) {}

BlockingPool::~BlockingPool() { join(); }

namespace {

// A plain coroutine, not a capturing lambda: g++ 12 destroys a lambda
// coroutine's captures twice when co_spawn owns the lambda.
net::awaitable<void> call(std::function<void()> work) {
  work();
  co_return;
}

}  // namespace

http::Task<void> BlockingPool::run(std::function<void()> work) {
  co_await net::co_spawn(short_->get_executor(), call(std::move(work)), net::use_awaitable);
}

std::function<void()> BlockingPool::counted_long(std::function<void()> work) {
  ++long_running_;
  return [this, work = std::move(work)] {
    struct Done {
      std::atomic<size_t>& running;
      ~Done() { --running; }
    } done{long_running_};
    work();
  };
}

http::Task<void> BlockingPool::run_long(std::function<void()> work) {
  auto counted = counted_long(std::move(work));
  co_await net::co_spawn(long_->get_executor(), call(std::move(counted)), net::use_awaitable);
}

void BlockingPool::post(std::function<void()> work) { net::post(*short_, std::move(work)); }

void BlockingPool::post_long(std::function<void()> work) {
  net::post(*long_, counted_long(std::move(work)));
}

void BlockingPool::join() {
  short_->join();
  long_->join();
}

bool BlockingPool::join_within(std::chrono::milliseconds grace) {
  short_->join();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (long_running_ > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  long_->join();
  return true;
}

}  // namespace abx::daemon
