#include "daemon/blocking_pool.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <system_error>
#include <thread>

namespace abx::daemon {

namespace net = boost::asio;

BlockingPool::BlockingPool(size_t short_threads, size_t long_threads)
    : short_(std::make_unique<net::thread_pool>(short_threads)),
      long_(std::make_unique<net::thread_pool>(0)),
      long_max_(long_threads) {}

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

void BlockingPool::grow_long() {
  std::lock_guard lock(long_mutex_);
  if (long_joined_ || long_threads_.size() >= std::min(long_max_, long_running_.load())) return;
  try {
    long_threads_.emplace_back([pool = long_.get()] { pool->attach(); });
  } catch (const std::system_error&) {
    // No thread to spare: the work waits for one of the lane's running ones.
  }
}

http::Task<void> BlockingPool::run_long(std::function<void()> work) {
  auto counted = counted_long(std::move(work));
  grow_long();
  co_await net::co_spawn(long_->get_executor(), call(std::move(counted)), net::use_awaitable);
}

void BlockingPool::post(std::function<void()> work) { net::post(*short_, std::move(work)); }

void BlockingPool::post_long(std::function<void()> work) {
  auto counted = counted_long(std::move(work));
  grow_long();
  net::post(*long_, std::move(counted));
}

// Lets the attached threads return once the lane's work is done (a pool
// without threads of its own counts none in join), then joins them.
void BlockingPool::join_long() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(long_mutex_);
    if (long_joined_) return;
    long_joined_ = true;
    threads = std::move(long_threads_);
  }
  long_->wait();
  for (std::thread& thread : threads) thread.join();
}

void BlockingPool::join() {
  short_->join();
  join_long();
}

bool BlockingPool::join_within(std::chrono::milliseconds grace) {
  short_->join();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (long_running_ > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  join_long();
  return true;
}

}  // namespace abx::daemon
