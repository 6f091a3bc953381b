#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "cli/terminal.h"
#include "cli/text.h"

namespace abx::cli {

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(total > kProgressThreshold && terminal::is_tty(STDERR_FILENO)) {}

Progress::~Progress() {
  if (enabled_) draw(true);
}

void Progress::add(std::uint64_t bytes) {
  done_ += bytes;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(false);
}

void Progress::draw(bool final) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line = format_progress(done_, total_, seconds, 30);
  std::fprintf(stderr, "\r\033[K%s %s%s", label_.c_str(), line.c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace abx::cli
