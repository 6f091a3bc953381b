#include "daemon/output_lines.h"

namespace abx::daemon {

void OutputLines::add(const std::string& stream, std::string_view bytes) {
  std::lock_guard lock(mutex_);
  std::string& partial = partial_[stream];
  for (const char c : bytes) {
    if (c == '\n') {
      emit(stream, std::exchange(partial, {}));
      continue;
    }
    if (c == '\r') continue;
    partial += c;
    // A line without end (a flood of bytes) is logged in pieces, never held whole.
    if (partial.size() >= SandboxLog::kMaxLine) emit(stream, std::exchange(partial, {}));
  }
}

void OutputLines::ended(const runtime::ExitInfo& exit) {
  std::lock_guard lock(mutex_);
  for (auto& [stream, partial] : partial_) {
    if (!partial.empty()) emit(stream, std::exchange(partial, {}));
  }
  exit_ = exit;
}

std::vector<std::string> OutputLines::tail() const {
  std::lock_guard lock(mutex_);
  return {tail_.begin(), tail_.end()};
}

std::optional<runtime::ExitInfo> OutputLines::exit() const {
  std::lock_guard lock(mutex_);
  return exit_;
}

void OutputLines::emit(const std::string& stream, std::string line) {
  log_->add(stream == "stderr" ? "warn" : "info", prefix_ + line);
  // The tail goes into an error message, the daemon's log and the caller's
  // terminal: the sandbox's escape sequences must not (the log's entries are
  // cleaned by SandboxLog).
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  tail_.push_back(std::move(line));
  if (tail_.size() > kTailLines) tail_.pop_front();
}

}  // namespace abx::daemon
