#include "daemon/sandbox_log.h"

#include <chrono>

namespace abx::daemon {
namespace {

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A command line may be long and hold anything: one bounded line, no
// control characters (the CLI prints it to a terminal).
std::string one_line(std::string text) {
  if (text.size() > SandboxLog::kMaxLine) {
    text.resize(SandboxLog::kMaxLine - 3);
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
      text.pop_back();
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
    text += "...";
  }
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

}  // namespace

void SandboxLog::add(std::string level, std::string message) {
  LogEntry entry{unix_ms(), std::move(level), one_line(std::move(message))};
  std::lock_guard lock(mutex_);
  if (entries_.size() == kMaxEntries) entries_.pop_front();
  entries_.push_back(std::move(entry));
}

std::vector<LogEntry> SandboxLog::since(int64_t start_ms, size_t limit) const {
  std::lock_guard lock(mutex_);
  std::vector<LogEntry> out;
  for (const LogEntry& entry : entries_) {
    if (out.size() == limit) break;
    if (entry.at_ms >= start_ms) out.push_back(entry);
  }
  return out;
}

void SandboxLog::keep_newest(size_t count) {
  std::lock_guard lock(mutex_);
  while (entries_.size() > count) entries_.pop_front();
}

}  // namespace abx::daemon
