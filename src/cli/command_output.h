// Where a sandbox command's output lands on this machine, for every CLI
// command that shows it (`abx exec` live, `abx logs ID PID` from the agent's
// ring): its stdout to ours and its stderr to ours, sanitized when they are a
// terminal, and a reader that went away reported instead of killing us.
#pragma once

#include <signal.h>

#include <optional>
#include <string_view>

#include "cli/text.h"

namespace abx::cli {

// Writes all of `data`; false when the reader is gone (EPIPE):
// `abx exec ID -- yes | head -2`. Other failures of local output are ignored:
// they must not stop the command.
bool write_all(int fd, std::string_view data);

// SIGPIPE ignored while it lives: a closed stdout is an EPIPE to act on.
class IgnoredSigpipe {
 public:
  IgnoredSigpipe();
  ~IgnoredSigpipe();
  IgnoredSigpipe(const IgnoredSigpipe&) = delete;
  IgnoredSigpipe& operator=(const IgnoredSigpipe&) = delete;

 private:
  struct sigaction old_ {};
};

// A command's stdout and stderr. Unless `raw`, output meant for no terminal
// that lands on one anyway is sanitized (escape sequences from a sandbox must
// not reach the user's terminal); a pipe or file gets every byte.
class CommandOutput {
 public:
  explicit CommandOutput(bool raw);
  // False when the reader is gone.
  bool write_stdout(std::string_view bytes) { return write(kStdout, bytes); }
  bool write_stderr(std::string_view bytes) { return write(kStderr, bytes); }
  // What the sanitizers still hold (a character cut at the end).
  void finish();

 private:
  enum Stream { kStdout, kStderr };
  bool write(Stream stream, std::string_view bytes);
  std::optional<TerminalSanitizer> sanitizers_[2];
};

}  // namespace abx::cli
