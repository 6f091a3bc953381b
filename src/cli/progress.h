// A transfer progress bar on stderr, drawn only where a person watches
// (stderr is a TTY) and only for transfers big enough to wait for.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace abx::cli {

inline constexpr std::uint64_t kProgressThreshold = 1u << 20;

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
