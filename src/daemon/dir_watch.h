// envd's WatchDir on the host: inotify on directories inside a sandbox, each
// resolved with openat2(RESOLVE_IN_ROOT) and watched through /proc/self/fd/N,
// so a symlink inside the sandbox never points a watch at a host directory.
// A thread per watch reads events as they come, as envd's fsnotify goroutine
// does: a directory made in a recursive watch is watched at once, before
// files are written into it, not when the client next asks for events.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

struct inotify_event;

namespace abx::daemon {

struct WatchEvent {
  std::string name;  // relative to the watched directory ("sub/file" when recursive)
  std::string type;  // EVENT_TYPE_CREATE|WRITE|REMOVE|RENAME|CHMOD
  // With include_entry, for CREATE, WRITE and CHMOD (the kinds whose path
  // still names the entry, as envd's opCarriesEntry) while the entry exists.
  std::optional<runtime::EntryInfo> entry;
};

class DirWatch {
 public:
  // `path` is absolute inside the sandbox and must be a directory (ENOTDIR otherwise).
  static Result<std::unique_ptr<DirWatch>> open(std::shared_ptr<runtime::Sandbox> sandbox,
                                                std::string path, bool recursive);

  DirWatch(const DirWatch&) = delete;
  DirWatch& operator=(const DirWatch&) = delete;
  ~DirWatch();

  // Each CREATE, WRITE and CHMOD event then carries the entry, as envd's
  // includeEntry: set before the first drain().
  void include_entries();

  // The events queued since the last call; never blocks for long.
  std::vector<WatchEvent> drain();
  // False once the watched directory itself is gone.
  bool alive();

 private:
  DirWatch(std::shared_ptr<runtime::Sandbox> sandbox, std::string path, bool recursive,
           UniqueFd inotify);
  Status add(const std::string& relative);
  void add_tree(const std::string& relative);
  void translate(const ::inotify_event& event, std::vector<WatchEvent>* out);
  void read_events();  // with mutex_ held
  void run();          // the reader thread
  void attach_entry(WatchEvent& event);

  std::shared_ptr<runtime::Sandbox> sandbox_;
  std::string sandbox_id_;  // whose share of the watch budget this holds
  std::string root_;
  bool recursive_;
  bool include_entry_ = false;
  UniqueFd inotify_;
  UniqueFd wake_;     // an eventfd: the destructor's word to the reader thread
  std::mutex mutex_;  // the reader thread and concurrent GetWatcherEvents
  std::vector<WatchEvent> pending_;
  std::thread reader_;
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
