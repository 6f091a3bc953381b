// abx exec's session as other commands use it too (abx run): the options,
// their flags, and the run, which mirrors the remote command locally.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::cli {

inline constexpr int kMaxCommandTimeout = 7 * 86400;
// What exec, run and shell exit with when abx itself fails (no such sandbox or
// template, daemon unreachable), as docker's do: every other code is the command's.
inline constexpr int kOwnFailureExit = 125;

struct ExecOptions {
  std::string id;
  bool tty = false;
  bool interactive = false;  // -i: stdin goes to the command even from a terminal
  bool sig_proxy = true;     // signals to abx go to the command (else: it is killed)
  bool raw = false;          // sandbox output to a terminal unsanitized
  std::vector<std::string> env;
  std::string cwd;
  std::string user;  // "" = the sandbox's default user
  int timeout = 0;
  std::vector<std::string> command;
};

// -t, -i, --sig-proxy, --raw, -e, -w, -u, --timeout.
void add_exec_flags(CLI::App& app, ExecOptions& options);

// Runs options.command in sandbox options.id: output streamed, stdin and
// signals passed on; the command's exit code (124 at its --timeout).
Result<int> run_exec(const ExecOptions& options);

// Prints "abx: <error, with its hint>" and returns kOwnFailureExit.
int own_failure(const Error& error);

}  // namespace abx::cli
