// The local terminal: TTY checks, window size, raw mode, y/N questions.
#pragma once

#include <termios.h>

#include <string>

namespace abx::cli::terminal {

bool is_tty(int fd);

struct Size {
  int cols = 80;
  int rows = 24;
};
Size window_size(int fd);

// Puts `fd` in raw mode for its lifetime, so keystrokes (Ctrl-C included) go
// to the remote PTY; the destructor restores the saved mode on every exit path.
class RawMode {
 public:
  explicit RawMode(int fd);
  ~RawMode();
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  int fd_;
  bool active_ = false;
  termios saved_{};
};

// Prints "<question> [y/N] " on stderr and reads an answer from stdin.
bool confirm(const std::string& question);

}  // namespace abx::cli::terminal
