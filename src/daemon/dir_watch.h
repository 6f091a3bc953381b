// envd's WatchDir on the host: inotify on directories inside a sandbox, each
// resolved with openat2(RESOLVE_IN_ROOT) and watched through /proc/self/fd/N,
// so a symlink inside the sandbox never points a watch at a host directory.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

struct inotify_event;

namespace abx::daemon {

struct WatchEvent {
  std::string name;  // relative to the watched directory ("sub/file" when recursive)
  std::string type;  // EVENT_TYPE_CREATE|WRITE|REMOVE|RENAME|CHMOD
};

class DirWatch {
 public:
  // `path` is absolute inside the sandbox and must be a directory (ENOTDIR otherwise).
  static Result<std::unique_ptr<DirWatch>> open(std::shared_ptr<runtime::Sandbox> sandbox,
                                                std::string path, bool recursive);

  DirWatch(const DirWatch&) = delete;
  DirWatch& operator=(const DirWatch&) = delete;
  ~DirWatch();

  // The events queued since the last call; never blocks.
  std::vector<WatchEvent> drain();
  // False once the watched directory itself is gone.
  bool alive();

 private:
  DirWatch(std::shared_ptr<runtime::Sandbox> sandbox, std::string path, bool recursive,
           UniqueFd inotify);
  Status add(const std::string& relative);
  void add_tree(const std::string& relative);
  void translate(const ::inotify_event& event, std::vector<WatchEvent>* out);

  std::shared_ptr<runtime::Sandbox> sandbox_;
  std::string sandbox_id_;  // whose share of the watch budget this holds
  std::string root_;
  bool recursive_;
  UniqueFd inotify_;
  std::mutex mutex_;  // drain() may be called by concurrent GetWatcherEvents
  std::map<int, std::string> relative_of_;
  int root_wd_ = -1;  // watch descriptor → dir relative to root_
};

// The polling watchers of the sync Python SDK (CreateWatcher/GetWatcherEvents/
// RemoveWatcher), one table per sandbox so they end with it.
class WatcherTable {
 public:
  std::string add(std::shared_ptr<DirWatch> watch);
  // Null when the id is unknown.
  std::shared_ptr<DirWatch> find(const std::string& id);
  bool remove(const std::string& id);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<DirWatch>> watches_;
};

}  // namespace abx::daemon
