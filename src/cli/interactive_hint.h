// `abx exec ID -- bash` typed at a terminal without -it: the shell gets no
// terminal and no input, so it exits at once and the user sees nothing. A
// one-line hint on stderr names the flags; what runs is left as it was.
#pragma once

#include <string>
#include <vector>

namespace abx::cli {

// Whether `command` is an interactive program alone (bash, sh, python3, …,
// with no arguments) that is being run without -t from a terminal.
bool wants_a_terminal(const std::vector<std::string>& command, bool tty);

// Prints "abx: hint: …" on stderr when wants_a_terminal, suggesting
// `<how> -- <command>` (how: "abx exec -it ID").
void hint_interactive(const std::vector<std::string>& command, bool tty, const std::string& how);

}  // namespace abx::cli
