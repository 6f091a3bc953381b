#include "daemon/dir_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/ids.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon {
namespace {

namespace sfs = runtime::sandbox_fs;

// Every watch is an inotify instance of the daemon's, charged to host root
// together with every root service on the host (fs.inotify.max_user_instances,
// 128 by default): no sandbox, and not all of them, may take that budget.
constexpr int kWatchesPerSandbox = 8;
constexpr int kWatchesInDaemon = 48;
// And each watched directory is one of host root's inotify watches.
constexpr size_t kDirsPerWatch = 4096;
// Events kept for a client that does not ask for them; later ones are dropped.
constexpr size_t kMaxPendingEvents = 16 * 1024;

class WatchBudget {
 public:
  Status acquire(const std::string& sandbox_id) {
    std::lock_guard lock(mutex_);
    int& mine = per_sandbox_[sandbox_id];
    if (mine >= kWatchesPerSandbox) {
      return Error::with_message("watch: sandbox " + sandbox_id + " already has " +
                                     std::to_string(mine) +
                                     " directory watches (the limit); remove one first",
                                 kErrQuota);
    }
    if (total_ >= kWatchesInDaemon) {
      return Error::with_message(
          "watch: the daemon already holds " + std::to_string(total_) +
              " directory watches (the limit, which leaves the host's inotify instances to its "
              "own services); retry when one ends",
          kErrQuota);
    }
    ++mine;
    ++total_;
    return {};
  }
  void release(const std::string& sandbox_id) {
    std::lock_guard lock(mutex_);
    if (--per_sandbox_[sandbox_id] <= 0) per_sandbox_.erase(sandbox_id);
    --total_;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> per_sandbox_;
  int total_ = 0;
};

WatchBudget& budget() {
  static WatchBudget instance;
  return instance;
}

constexpr uint32_t kMask =
    IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR;

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// As envd's fsnotify reports them.
const char* event_type(uint32_t mask) {
  if (mask & (IN_CREATE | IN_MOVED_TO)) return "EVENT_TYPE_CREATE";
  if (mask & IN_MODIFY) return "EVENT_TYPE_WRITE";
  if (mask & IN_DELETE) return "EVENT_TYPE_REMOVE";
  if (mask & IN_MOVED_FROM) return "EVENT_TYPE_RENAME";
  if (mask & IN_ATTRIB) return "EVENT_TYPE_CHMOD";
  return nullptr;
}

}  // namespace

DirWatch::DirWatch(std::shared_ptr<runtime::Sandbox> sandbox, std::string path, bool recursive,
                   UniqueFd inotify)
    : sandbox_(std::move(sandbox)),
      sandbox_id_(sandbox_->record().id),
      root_(std::move(path)),
      recursive_(recursive),
      inotify_(std::move(inotify)) {}

// The reader is at most one sandbox file operation away from seeing the
// wake-up (a new directory's handle, an entry's stat): the join waits that long.
DirWatch::~DirWatch() {
  if (reader_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
    reader_.join();
  }
  budget().release(sandbox_id_);
}

Result<std::unique_ptr<DirWatch>> DirWatch::open(std::shared_ptr<runtime::Sandbox> sandbox,
                                                 std::string path, bool recursive) {
  if (Status s = budget().acquire(sandbox->record().id); !s) return s.error();
  UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) {
    budget().release(sandbox->record().id);
    return Error::from_errno("inotify_init1", path);
  }
  // From here the watch owns the budget slot (its destructor gives it back).
  std::unique_ptr<DirWatch> watch(
      new DirWatch(std::move(sandbox), std::move(path), recursive, std::move(inotify)));
  if (Status added = watch->add(""); !added) return added.error();
  if (recursive) watch->add_tree("");
  if (watch->relative_of_.size() > kDirsPerWatch) {
    return Error::with_message("watch " + watch->root_ + ": more than " +
                                   std::to_string(kDirsPerWatch) +
                                   " directories below it (the limit); watch a smaller tree",
                               kErrQuota);
  }
  watch->wake_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!watch->wake_.valid()) return Error::from_errno("eventfd", watch->root_);
  watch->reader_ = std::thread([raw = watch.get()] { raw->run(); });
  return watch;
}

// Beyond the limit a tree that grew later is watched in part, not at host
// root's expense.
Status DirWatch::add(const std::string& relative) {
  if (relative_of_.size() > kDirsPerWatch)
    return Error::with_message("watch: directory limit reached", kErrQuota);
  auto dir = sfs::open_dir(*sandbox_, join(root_, relative));
  if (!dir) return dir.error();
  const std::string handle = "/proc/self/fd/" + std::to_string(dir->get());
  const int wd = ::inotify_add_watch(inotify_.get(), handle.c_str(), kMask);
  if (wd < 0) return Error::from_errno("inotify_add_watch", join(root_, relative));
  relative_of_[wd] = relative;
  if (relative.empty()) root_wd_ = wd;
  return {};
}

// Subdirectories of an already watched directory; symlinks are not followed.
void DirWatch::add_tree(const std::string& relative) {
  auto entries = sfs::list_dir(*sandbox_, join(root_, relative), 1);
  if (!entries) return;  // removed meanwhile: its events are moot
  for (const auto& entry : *entries) {
    if (entry.type != sfs::FileType::kDirectory) continue;
    const std::string child = join(relative, entry.name);
    if (add(child)) add_tree(child);
  }
}

void DirWatch::translate(const inotify_event& event, std::vector<WatchEvent>* out) {
  const auto dir = relative_of_.find(event.wd);
  if (dir == relative_of_.end()) return;
  if (event.mask & IN_IGNORED) {
    relative_of_.erase(dir);
    return;
  }
  if (event.len == 0) return;  // events on the directory itself
  const std::string name = join(dir->second, event.name);
  if (const char* type = event_type(event.mask)) {
    out->push_back({name, type, std::nullopt});
    // No stat (a file operation in the sandbox) for an event that will be dropped.
    const bool kept = pending_.size() + out->size() <= kMaxPendingEvents;
    if (include_entry_ && kept) attach_entry(out->back());
  }
  const bool new_dir = (event.mask & IN_ISDIR) && (event.mask & (IN_CREATE | IN_MOVED_TO));
  if (recursive_ && new_dir && add(name)) add_tree(name);
}

void DirWatch::include_entries() {
  std::lock_guard lock(mutex_);
  include_entry_ = true;
}

// Best effort, as envd's: an entry gone by now goes without.
void DirWatch::attach_entry(WatchEvent& event) {
  if (event.type == "EVENT_TYPE_REMOVE" || event.type == "EVENT_TYPE_RENAME") return;
  auto info = sfs::stat(*sandbox_, join(root_, event.name));
  if (info) event.entry = std::move(*info);
}

bool DirWatch::alive() {
  std::lock_guard lock(mutex_);
  return relative_of_.count(root_wd_) > 0;
}

void DirWatch::read_events() {
  alignas(inotify_event) char buffer[16 * 1024];
  std::vector<WatchEvent> events;
  for (;;) {
    const ssize_t got = ::read(inotify_.get(), buffer, sizeof buffer);
    if (got <= 0) break;
    for (ssize_t at = 0; at < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      translate(*event, &events);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  for (auto& event : events) {
    if (pending_.size() >= kMaxPendingEvents) break;
    pending_.push_back(std::move(event));
  }
}

void DirWatch::run() {
  for (;;) {
    pollfd fds[2] = {{inotify_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents & (POLLERR | POLLNVAL)) return;
    std::lock_guard lock(mutex_);
    read_events();
  }
}

std::vector<WatchEvent> DirWatch::drain() {
  std::lock_guard lock(mutex_);
  read_events();
  return std::exchange(pending_, {});
}

std::string WatcherTable::add(std::shared_ptr<DirWatch> watch) {
  const std::string id = ids::random_hex(16);
  std::lock_guard lock(mutex_);
  watches_[id] = std::move(watch);
  return id;
}

std::shared_ptr<DirWatch> WatcherTable::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = watches_.find(id);
  return it == watches_.end() ? nullptr : it->second;
}

bool WatcherTable::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  return watches_.erase(id) > 0;
}

}  // namespace abx::daemon
