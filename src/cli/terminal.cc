#include "cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>

namespace abx::cli::terminal {

bool is_tty(int fd) { return ::isatty(fd) == 1; }

Size window_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return {};
  return {ws.ws_col, ws.ws_row};
}

RawMode::RawMode(int fd) : fd_(fd) {
  if (::tcgetattr(fd_, &saved_) != 0) return;
  termios raw = saved_;
  ::cfmakeraw(&raw);
  active_ = ::tcsetattr(fd_, TCSANOW, &raw) == 0;
}

RawMode::~RawMode() {
  if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
}

bool confirm(const std::string& question) {
  std::cerr << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes" || answer == "YES";
}

}  // namespace abx::cli::terminal
