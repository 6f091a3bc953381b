#include "cli/interactive_hint.h"

#include <unistd.h>

#include <array>
#include <iostream>
#include <string_view>

#include "cli/terminal.h"

namespace abx::cli {
namespace {

// Shells and REPLs that, given no arguments, wait for a person at a terminal.
constexpr std::array<std::string_view, 14> kInteractive = {
    "bash",   "sh",      "zsh",     "fish", "dash", "ash",  "ksh",
    "python", "python3", "ipython", "node", "irb",  "psql", "sqlite3"};

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool wants_a_terminal(const std::vector<std::string>& command, bool tty) {
  if (tty || command.size() != 1 || !terminal::is_tty(STDIN_FILENO)) return false;
  const std::string_view program = base_name(command.front());
  for (const std::string_view name : kInteractive)
    if (program == name) return true;
  return false;
}

void hint_interactive(const std::vector<std::string>& command, bool tty, const std::string& how) {
  if (!wants_a_terminal(command, tty)) return;
  std::cerr << "abx: hint: " << command.front()
            << " gets no terminal without -it and may exit at once; for an interactive "
               "session: "
            << how << " -- " << command.front() << "\n";
}

}  // namespace abx::cli
