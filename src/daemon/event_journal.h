// The flight recorder's store: what happened in each sandbox, as typed events
// (lifecycle: created, timeout set, paused, resumed, snapshot, forked, network
// updated, ended with why; commands: started with argv, user, cwd and env
// names, ended with exit code), appended to <dir>/<id>.jsonl the moment they
// happen, so a daemon killed a moment later loses none, and kept
// the retention time after the sandbox ends. Bounded: past max_bytes a
// sandbox's file becomes <id>.jsonl.1 (the older .1 goes), so a sandbox
// keeps between max_bytes and twice that. Both are the operator's
// (config.json's "events"), 4 MiB and 24 h by default. Every event names its team: a reader of
// another team finds nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx::daemon {

// One sandbox's journal, open for appending; thread-safe.
class EventJournal {
 public:
  EventJournal(std::filesystem::path file, std::string team, uint64_t next_seq, UniqueFd fd,
               uint64_t max_bytes)
      : file_(std::move(file)),
        team_(std::move(team)),
        max_bytes_(max_bytes),
        next_seq_(next_seq),
        fd_(std::move(fd)) {}
  // `type`: "lifecycle" or "commands"; `name`: what happened ("created").
  void record(const std::string& type, const std::string& name, nlohmann::json fields = {});
  // The sandbox ended: its file is let go (its record stays on disk for the
  // retention time); later events are dropped.
  void close();

 private:
  void rotate_locked();
  std::filesystem::path file_;
  std::string team_;
  const uint64_t max_bytes_;
  std::mutex mutex_;
  uint64_t next_seq_;
  UniqueFd fd_;
  uint64_t written_ = 0;  // bytes in the current file since opened (a lower bound)
  bool closed_ = false;
};

// How much of each sandbox's record is kept, and how long after it ended.
struct EventLimits {
  uint64_t max_bytes = 4 << 20;
  std::chrono::hours retention{24};
  bool enabled = true;  // false: no sandbox gets a record (the bench's side by side)
};

class EventJournals {
 public:
  using Limits = EventLimits;
  static constexpr size_t kMaxRead = 10000;  // events one read returns at most

  explicit EventJournals(std::filesystem::path dir, Limits limits = {})
      : dir_(std::move(dir)), limits_(limits) {}
  const Limits& limits() const { return limits_; }
  // Opens (or, after a daemon restart, reopens: its numbering goes on) the
  // journal of sandbox `id`; none when the dir cannot be written (the
  // sandbox works without its record, and the daemon's log says why).
  std::shared_ptr<EventJournal> open(const std::string& id, const std::string& team) const;
  // `team`'s events of sandbox `id` with a seq above `after`, of `type` if
  // given, oldest first; ENOENT when there are none it may see.
  Result<std::vector<nlohmann::json>> read(const std::string& id, const std::string& team,
                                           uint64_t after, const std::string& type) const;
  // Removes the journals of sandboxes not in `live` last written before the retention.
  void sweep(const std::vector<std::string>& live) const;
  // Changes whenever an event of sandbox `id` is recorded (its file's size
  // and time): a follower reads again only then.
  uint64_t stamp(const std::string& id) const;
  // The sandboxes that have a record kept (live or ended within the retention).
  std::vector<std::string> ids() const;
  // The first and the last event of sandbox `id`'s record as kept (its
  // `created` and, once it ended, its `ended`), if `team`'s; read from the
  // ends of its files only, so a listing of many stays cheap.
  struct Bounds {
    nlohmann::json first;
    nlohmann::json last;
  };
  std::optional<Bounds> bounds(const std::string& id, const std::string& team) const;

 private:
  std::filesystem::path file_of(const std::string& id) const;
  std::filesystem::path dir_;
  Limits limits_;
};

// config.json's "events": {"maxMiB": 1..1024, "retentionHours": 1..8760, "enabled": bool};
// absent keys (or no file) keep the defaults.
Result<EventJournals::Limits> load_event_limits(const std::filesystem::path& config_file);

}  // namespace abx::daemon
