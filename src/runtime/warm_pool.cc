#include "runtime/warm_pool.h"

#include "common/ids.h"

namespace abx::runtime {
namespace {

// Everything a create request may differ in, except the id.
std::string spec_key(const SandboxSpec& spec) {
  // Build sandboxes (writable_dir) and loopback-only ones never come to the pool.
  std::string key = spec.hostname + '\n' + spec.warm_up + '\n';
  for (const auto& layer : spec.rootfs.lower_layers) key += "L" + layer.string() + '\n';
  for (const auto& bind : spec.rootfs.read_only_binds)
    key += "B" + bind.host_path.string() + '\n' + bind.sandbox_path.string() + '\n';
  for (const auto& volume : spec.rootfs.volumes)
    key += "V" + volume.host_path.string() + '\n' + volume.sandbox_path.string() + '\n';
  key += spec.rootfs.allow_setid ? "setid\n" : "nnp\n";
  // The token is each sandbox's own: such a sandbox is never pooled.
  if (spec.agent_port != 0)
    key += "agent " + std::to_string(spec.agent_port) + ' ' + spec.agent_token + '\n';
  const Limits& l = spec.limits;
  for (uint64_t value : {l.memory_bytes, l.pids, uint64_t{l.cpu_millicores}, l.disk_bytes})
    key += std::to_string(value) + ' ';
  return key;
}

}  // namespace

WarmPool::WarmPool(size_t per_spec, Make make, Discard discard)
    : per_spec_(per_spec),
      make_(std::move(make)),
      discard_(std::move(discard)),
      thread_([this] { run(); }) {}

WarmPool::~WarmPool() { drain(); }

std::unique_ptr<Sandbox> WarmPool::take(const SandboxSpec& spec) {
  if (per_spec_ == 0) return nullptr;
  std::lock_guard lock(mutex_);
  if (stopping_) return nullptr;
  Shelf& shelf = shelves_[spec_key(spec)];
  shelf.spec = spec;
  shelf.spec.id.clear();
  shelf.refill = true;
  wake_.notify_one();
  if (shelf.ready.empty()) return nullptr;
  std::unique_ptr<Sandbox> sandbox = std::move(shelf.ready.back());
  shelf.ready.pop_back();
  return sandbox;
}

std::vector<std::string> WarmPool::ids() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out(making_.begin(), making_.end());
  for (const auto& [key, shelf] : shelves_)
    for (const auto& sandbox : shelf.ready) out.push_back(sandbox->record().id);
  return out;
}

void WarmPool::clear() {
  std::vector<std::unique_ptr<Sandbox>> stale;
  {
    std::lock_guard lock(mutex_);
    ++generation_;
    for (auto& [key, shelf] : shelves_) {
      for (auto& sandbox : shelf.ready) stale.push_back(std::move(sandbox));
      shelf.ready.clear();
      shelf.refill = false;  // refilled on the next take, from the template as it is then
    }
  }
  for (auto& sandbox : stale) {
    const SandboxRecord record = sandbox->record();
    sandbox.reset();
    discard_(record);
  }
}

void WarmPool::drain() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  for (auto& [key, shelf] : shelves_) {
    for (auto& sandbox : shelf.ready) {
      const SandboxRecord record = sandbox->record();
      sandbox.reset();  // closes the control connection first
      discard_(record);
    }
    shelf.ready.clear();
  }
}

WarmPool::Shelf* WarmPool::next_to_fill() {
  for (auto& [key, shelf] : shelves_) {
    if (shelf.refill && shelf.ready.size() >= per_spec_) shelf.refill = false;
    if (shelf.refill) return &shelf;
  }
  return nullptr;
}

// One sandbox at a time: refilling must not compete with the creates that
// callers are waiting for more than it has to.
void WarmPool::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    Shelf* shelf = nullptr;
    wake_.wait(lock, [&] { return stopping_ || (shelf = next_to_fill()) != nullptr; });
    if (stopping_) return;
    SandboxSpec spec = shelf->spec;
    spec.id = ids::sandbox_id();
    making_.insert(spec.id);
    const uint64_t generation = generation_;
    lock.unlock();
    auto made = make_(spec);
    lock.lock();
    making_.erase(spec.id);
    if (made && generation != generation_) {  // cleared meanwhile: made from an old template
      const SandboxRecord record = (*made)->record();
      made->reset();
      lock.unlock();
      discard_(record);
      lock.lock();
      continue;
    }
    // Shelves are never erased, so `shelf` is still valid.
    if (made)
      shelf->ready.push_back(std::move(*made));
    else
      shelf->refill = false;  // e.g. the template is gone: wait for the next take
  }
}

}  // namespace abx::runtime
