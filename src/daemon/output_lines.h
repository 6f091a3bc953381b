// A process's output copied line by line into its sandbox's log (a
// template's start command, whose output `abx logs` shows), with the last
// few lines kept for the error a failed start reports. Bounded: a line is
// cut at SandboxLog::kMaxLine, and the log keeps only its newest entries.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/sandbox_log.h"
#include "runtime/runtime.h"

namespace abx::daemon {

class OutputLines {
 public:
  static constexpr size_t kTailLines = 5;

  // `prefix` starts each log line ("start: "), so the service's output stands
  // apart from the daemon's own entries.
  OutputLines(std::shared_ptr<SandboxLog> log, std::string prefix)
      : log_(std::move(log)), prefix_(std::move(prefix)) {}

  // Bytes read from `stream` ("stdout", "stderr", "pty").
  void add(const std::string& stream, std::string_view bytes);
  // The process ended: partial lines are logged, and `exit` kept.
  void ended(const runtime::ExitInfo& exit);

  std::vector<std::string> tail() const;
  std::optional<runtime::ExitInfo> exit() const;

 private:
  void emit(const std::string& stream, std::string line);  // mutex_ held

  std::shared_ptr<SandboxLog> log_;
  const std::string prefix_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> partial_;  // per stream: bytes after the last newline
  std::deque<std::string> tail_;
  std::optional<runtime::ExitInfo> exit_;
};

}  // namespace abx::daemon
