#include "common/proc_locks.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace abx::proc_locks {
namespace {

// "fd:01:1234": hex major and minor, decimal inode (fs/locks.c).
std::optional<FileId> parse_file_id(const std::string& text) {
  unsigned major = 0, minor = 0;
  unsigned long long inode = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%llu%c", &major, &minor, &inode, &tail) != 3)
    return std::nullopt;
  return FileId{major, minor, inode};
}

}  // namespace

// A line: "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; a process
// waiting for the lock is listed after its holder as "1: -> FLOCK ...".
std::optional<pid_t> flock_holder_in(std::string_view proc_locks, const FileId& file) {
  std::istringstream lines{std::string(proc_locks)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string number, kind, mode, access, file_id;
    long pid = 0;
    if (!(words >> number >> kind) || kind != "FLOCK") continue;  // "->" marks a waiter
    if (!(words >> mode >> access >> pid >> file_id)) continue;
    const auto id = parse_file_id(file_id);
    if (!id || id->major != file.major || id->minor != file.minor || id->inode != file.inode)
      continue;
    if (pid > 0) return static_cast<pid_t>(pid);
  }
  return std::nullopt;
}

std::optional<pid_t> flock_holder(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  std::ifstream in("/proc/locks");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return flock_holder_in(
      text.str(), FileId{::major(st.st_dev), ::minor(st.st_dev), static_cast<uint64_t>(st.st_ino)});
}

}  // namespace abx::proc_locks
