// A sandbox's log for E2B's GET /sandboxes/{id}/logs: what happened to it
// (created, timeout changed, adopted after a daemon restart) and the commands
// started in it with their ends. Bounded: the newest kMaxEntries lines of at
// most kMaxLine bytes each, in memory (about 0.5 MB at most a sandbox); a
// sandbox's log is kept a while after it ends (ended_logs.h), and a daemon
// restart starts a new one.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/event_journal.h"

namespace abx::daemon {

struct LogEntry {
  int64_t at_ms = 0;  // unix time
  std::string level;  // "info", "warn", "error" as E2B's logEntries
  std::string message;
};

class SandboxLog {
 public:
  static constexpr size_t kMaxEntries = 1000;
  static constexpr size_t kMaxLine = 512;

  void add(std::string level, std::string message);
  // Entries at or after `start_ms`, oldest first, at most `limit`.
  std::vector<LogEntry> since(int64_t start_ms, size_t limit) const;
  // Drops all but the newest `count` entries.
  void keep_newest(size_t count);
  // The sandbox's flight record (event_journal.h), beside these lines: typed
  // events that outlive the daemon. Nothing is recorded without a journal.
  void set_journal(std::shared_ptr<EventJournal> journal) { journal_ = std::move(journal); }
  void event(const std::string& type, const std::string& name, nlohmann::json fields = {}) const {
    if (journal_) journal_->record(type, name, std::move(fields));
  }
  // The sandbox ended: its journal's file is closed (this log is kept a
  // while after, and an fd for each would add up).
  void close_journal() const {
    if (journal_) journal_->close();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<LogEntry> entries_;
  std::shared_ptr<EventJournal> journal_;  // set once, before the sandbox is shared
};

}  // namespace abx::daemon
