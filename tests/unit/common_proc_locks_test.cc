// Naming the process that holds a data dir's lock from /proc/locks, not from
// the pid the lock file records.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "common/data_dir_lock.h"
#include "common/proc_locks.h"
#include "temp_dir.h"

namespace abx {
namespace {

TEST(ProcLocks, NamesTheFlockHolderOfThatFileOnly) {
  const std::string text =
      "1: POSIX  ADVISORY  WRITE 111 fd:01:4242 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 222 fd:02:4242 0 EOF\n"
      "3: FLOCK  ADVISORY  WRITE 333 fd:01:4243 0 EOF\n"
      "4: FLOCK  ADVISORY  WRITE 444 fd:01:4242 0 EOF\n"
      "4: -> FLOCK  ADVISORY  WRITE 555 fd:01:4242 0 EOF\n"
      "5: OFDLCK ADVISORY  READ  -1 fd:01:4242 0 EOF\n";
  EXPECT_EQ(proc_locks::flock_holder_in(text, {0xfd, 1, 4242}), 444);
  EXPECT_EQ(proc_locks::flock_holder_in(text, {0xfd, 1, 4244}), std::nullopt);
  // A holder not visible from our pid namespace is listed as 0: unknown.
  EXPECT_EQ(
      proc_locks::flock_holder_in("1: FLOCK  ADVISORY  WRITE 0 00:2d:7 0 EOF\n", {0, 0x2d, 7}),
      std::nullopt);
  EXPECT_EQ(proc_locks::flock_holder_in("garbage\n\n1: FLOCK\n", {0, 0, 0}), std::nullopt);
}

// A child takes the lock; the lock file records another pid (ours, as a
// stale or foreign record would).
TEST(ProcLocks, TheDataDirsHolderIsTheProcessHoldingTheLock) {
  testing::TempDir dir("abx-proc-locks-test");
  std::ofstream(data_dir_lock_path(dir.path())) << ::getpid() << "\n";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(data_dir_lock_path(dir.path()).c_str(), O_RDONLY);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    (void)::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_EQ(lock_holder(dir.path()), child);
  auto second = lock_data_dir(dir.path());
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("pid " + std::to_string(child)), std::string::npos)
      << second.error().message();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(lock_holder(dir.path()), std::nullopt);
}

}  // namespace
}  // namespace abx
