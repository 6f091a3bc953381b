// The daemon on this machine: found through <data>/daemon.addr, started in
// the background on first need, stopped by the pid in <data>/daemon.pid.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/error.h"

namespace abx::cli::local_daemon {

// The URL in the address file, if a daemon there answers GET /health.
std::optional<std::string> healthy_url(const std::filesystem::path& data_dir);

// The daemon's URL, starting it (and saying so on stderr) when none answers.
// Never starts a second daemon while one holds the data dir's lock: when that
// one does not answer, the error says so and how to stop it.
Result<std::string> ensure_running(const std::filesystem::path& data_dir);

struct StartResult {
  std::string url;
  bool already_running = false;
};
Result<StartResult> start(const std::filesystem::path& data_dir);

// SIGTERM to the recorded pid (after checking it is an abx), then waits for it.
// Returns false when no daemon was running.
Result<bool> stop(const std::filesystem::path& data_dir);

// The pid of the daemon holding the data dir's lock, else the pid file's when
// that process is still an abx.
std::optional<pid_t> running_pid(const std::filesystem::path& data_dir);

// Names the process that holds DIR's lock (pid and command line) and how to
// stop it: "the local daemon (pid N: abx serve …) holds DIR but does not
// answer; stop it with …", or for another program "another program (pid N:
// CMD) holds the lock of DIR …; stop it: `kill N`".
Error not_answering(const std::filesystem::path& data_dir, pid_t pid);

}  // namespace abx::cli::local_daemon
