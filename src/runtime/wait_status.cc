#include <sys/wait.h>

#include <cctype>
#include <csignal>
#include <cstring>
#include <string>

#include "runtime/runtime.h"

namespace abx::runtime {
namespace {

// Go's os.ProcessState.String() wording, which E2B's envd reports: the
// signal's description in lower case ("killed", "terminated").
std::string signal_words(int signo) {
  const char* description = ::sigdescr_np(signo);
  if (description == nullptr) return "signal " + std::to_string(signo);
  std::string words = description;
  if (!words.empty()) words[0] = static_cast<char>(std::tolower(words[0]));
  return words;
}

}  // namespace

ExitInfo decode_wait_status(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exited = true;
    info.exit_code = WEXITSTATUS(status);
    info.status = "exit status " + std::to_string(info.exit_code);
  } else if (WIFSIGNALED(status)) {
    info.exit_code = 128 + WTERMSIG(status);
    info.status = "signal: " + signal_words(WTERMSIG(status));
    if (WCOREDUMP(status)) info.status += " (core dumped)";
  } else {
    info.exit_code = -1;
    info.status = "unknown wait status " + std::to_string(status);
  }
  return info;
}

}  // namespace abx::runtime
