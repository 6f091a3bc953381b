#include "runtime/helper_spawn.h"

#include <fcntl.h>
#include <spawn.h>

#include <algorithm>

extern char** environ;

namespace abx::runtime {

Result<pid_t> spawn_helper(const char* binary, std::vector<std::string> args,
                           const std::filesystem::path& log,
                           const std::vector<std::pair<int, int>>& fds) {
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int highest = 2;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  for (const auto& [ours, theirs] : fds) {
    posix_spawn_file_actions_adddup2(&actions, ours, theirs);
    highest = std::max(highest, theirs);
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, highest + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, binary, &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error{"start " + args.front(), rc, binary};
  return pid;
}

}  // namespace abx::runtime
