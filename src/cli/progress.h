// A transfer progress bar on stderr, drawn only where a person watches
// (stderr is a TTY) and only for transfers big enough to wait for. The line
// fits the terminal's width (COLUMNS, else the window size), so it never wraps.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace abx::cli {

inline constexpr std::uint64_t kProgressThreshold = 1u << 20;

// "name [#####-----]  42%  12.0 MiB/28.6 MiB  3.1 MiB/s  ETA 0:07" in at most
// `columns` - 1 cells (the last column would wrap on some terminals); what
// does not fit is left out: the rate first, then the name, then the amounts.
std::string progress_line(const std::string& label, std::uint64_t done, std::uint64_t total,
                          double seconds, int columns);

class Progress {
 public:
  Progress(std::string label, std::uint64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(std::uint64_t bytes);

 private:
  void draw(bool final);

  std::string label_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace abx::cli
