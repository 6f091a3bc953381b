#include "daemon/lazy_lane.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <system_error>

namespace abx::daemon {

namespace net = boost::asio;

namespace {

// A plain coroutine, not a capturing lambda: g++ 12 destroys a lambda
// coroutine's captures twice when co_spawn owns the lambda.
net::awaitable<void> call(std::function<void()> work) {
  work();
  co_return;
}

}  // namespace

LazyLane::LazyLane(size_t most) : pool_(std::make_unique<net::thread_pool>(0)), most_(most) {}

LazyLane::~LazyLane() { join(); }

std::function<void()> LazyLane::counted(std::function<void()> work) {
  ++running_;
  return [this, work = std::move(work)] {
    struct Done {
      std::atomic<size_t>& running;
      ~Done() { --running; }
    } done{running_};
    work();
  };
}

void LazyLane::grow() {
  std::lock_guard lock(mutex_);
  if (joined_ || threads_.size() >= std::min(most_, running_.load())) return;
  try {
    threads_.emplace_back([pool = pool_.get()] { pool->attach(); });
  } catch (const std::system_error&) {
    // No thread to spare: the work waits for one of the lane's running ones.
  }
}

http::Task<void> LazyLane::run(std::function<void()> work) {
  auto work_counted = counted(std::move(work));
  grow();
  co_await net::co_spawn(pool_->get_executor(), call(std::move(work_counted)), net::use_awaitable);
}

void LazyLane::post(std::function<void()> work) {
  auto work_counted = counted(std::move(work));
  grow();
  net::post(*pool_, std::move(work_counted));
}

// A pool without threads of its own counts none in wait(): the attached
// threads return once its work is done.
void LazyLane::join() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    if (joined_) return;
    joined_ = true;
    threads = std::move(threads_);
  }
  pool_->wait();
  for (std::thread& thread : threads) thread.join();
}

}  // namespace abx::daemon
