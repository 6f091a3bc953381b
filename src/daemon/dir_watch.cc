#include "daemon/dir_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>

#include "common/ids.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon {
namespace {

namespace sfs = runtime::sandbox_fs;

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
      root_(std::move(path)),
      recursive_(recursive),
      inotify_(std::move(inotify)) {}

Result<std::unique_ptr<DirWatch>> DirWatch::open(std::shared_ptr<runtime::Sandbox> sandbox,
                                                 std::string path, bool recursive) {
  UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) return Error::from_errno("inotify_init1", path);
  std::unique_ptr<DirWatch> watch(
      new DirWatch(std::move(sandbox), std::move(path), recursive, std::move(inotify)));
  if (Status added = watch->add(""); !added) return added.error();
  if (recursive) watch->add_tree("");
  return watch;
}

Status DirWatch::add(const std::string& relative) {
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
  if (const char* type = event_type(event.mask)) out->push_back({name, type});
  const bool new_dir = (event.mask & IN_ISDIR) && (event.mask & (IN_CREATE | IN_MOVED_TO));
  if (recursive_ && new_dir && add(name)) add_tree(name);
}

bool DirWatch::alive() {
  std::lock_guard lock(mutex_);
  return relative_of_.count(root_wd_) > 0;
}

std::vector<WatchEvent> DirWatch::drain() {
  std::lock_guard lock(mutex_);
  std::vector<WatchEvent> out;
  alignas(inotify_event) char buffer[16 * 1024];
  for (;;) {
    const ssize_t got = ::read(inotify_.get(), buffer, sizeof buffer);
    if (got <= 0) break;
    for (ssize_t at = 0; at < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      translate(*event, &out);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  return out;
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
