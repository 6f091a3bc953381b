#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "cli/terminal.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

constexpr int kMaxBar = 30;
constexpr int kMinBar = 5;

// 75.4 → "1:15"; an hour or more → "1:02:03".
std::string format_eta(double seconds) {
  const auto total = static_cast<long long>(std::min(seconds, 359999.0) + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60,
                  total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
  }
  return text;
}

// COLUMNS when the user set it (as most tools honour it), else the terminal's width.
int terminal_columns() {
  if (const char* env = std::getenv("COLUMNS")) {
    const int columns = std::atoi(env);
    if (columns > 0) return columns;
  }
  return terminal::window_size(STDERR_FILENO).cols;
}

}  // namespace

std::string progress_line(const std::string& label, std::uint64_t done, std::uint64_t total,
                          double seconds, int columns) {
  const double fraction =
      total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100));
  std::string name = sanitize_for_terminal(label);
  std::string amounts = format_bytes(done) + "/" + format_bytes(total);
  std::string rate;
  std::string eta;
  if (seconds > 0 && done > 0) {
    const double per_second = static_cast<double>(done) / seconds;
    rate = format_bytes(static_cast<std::uint64_t>(per_second)) + "/s";
    eta = "ETA " + format_eta(static_cast<double>(total - std::min(done, total)) / per_second);
  }
  const int room = std::max(columns - 1, 0);
  if (static_cast<int>(name.size()) > room / 3) name.resize(static_cast<size_t>(room / 3));
  // Besides the bar: "name " "[" "] " percent, and "  piece" for each piece shown.
  const auto others = [&] {
    size_t used = (name.empty() ? 0 : name.size() + 1) + 3 + std::string_view(percent).size();
    for (const auto* piece : {&amounts, &rate, &eta})
      if (!piece->empty()) used += 2 + piece->size();
    return static_cast<int>(used);
  };
  const std::array<std::string*, 4> droppable = {&rate, &name, &amounts, &eta};
  for (auto* piece : droppable) {
    if (room - others() >= kMinBar) break;
    piece->clear();
  }
  const int bar = std::clamp(room - others(), 0, kMaxBar);
  const int filled = static_cast<int>(fraction * bar);
  std::string line = name.empty() ? "" : name + " ";
  line += "[" + std::string(static_cast<size_t>(filled), '#') +
          std::string(static_cast<size_t>(bar - filled), '-') + "] " + percent;
  for (const auto* piece : {&amounts, &rate, &eta})
    if (!piece->empty()) line += "  " + *piece;
  if (static_cast<int>(line.size()) > room) line.resize(static_cast<size_t>(room));
  return line;
}

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
  // The width is read at every draw: the window may have been resized.
  const std::string line = progress_line(label_, done_, total_, seconds, terminal_columns());
  std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace abx::cli
