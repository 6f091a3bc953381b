#include <sys/wait.h>

#include <cctype>
#include <csignal>
#include <cstring>
#include <string>

#include "runtime/reaper.h"
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

std::string stop_reason(std::optional<int> wait_status, bool out_of_memory) {
  // The OOM killer sends SIGKILL; a count in the sandbox's memory cgroup
  // tells it from a kill from the host.
  const bool killed =
      !wait_status || (WIFSIGNALED(*wait_status) && WTERMSIG(*wait_status) == SIGKILL);
  if (out_of_memory && killed) return "its init was killed (out of memory)";
  if (!wait_status) return "its init exited";
  const ExitInfo info = decode_wait_status(*wait_status);
  if (info.exited) return "its init exited (" + info.status + ")";
  return "its init was killed (" + info.status + ")";
}

}  // namespace abx::runtime
