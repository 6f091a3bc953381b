// The nftables rules past the daemon's first 1024 fds: libnftables waits on
// its socket with select(), which aborts a process for an fd above 1023.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "runtime/nft_rules.h"
#include "temp_dir.h"

namespace abx::runtime {
namespace {

// In a network namespace of its own: the host's rules stay untouched.
int rules_work_with_many_fds_open(const std::filesystem::path& locks) {
  if (::unshare(CLONE_NEWNET) != 0) return 77;
  auto pool = NetPool::claim_exact(*egress::parse_cidr("10.250.0.0/16"), locks.string());
  if (!pool) return 10;
  NetworkConfig bounds;
  bounds.max_connections = 64;
  auto rules = NftRules::open(*pool, {}, {}, bounds);  // its context, while fds are few
  if (!rules || !(*rules)->install()) return 11;
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  std::vector<int> held;
  for (int i = 0; i < 1100; ++i) held.push_back(::dup(0));
  if (held.back() < 1024) return 12;
  egress::Policy policy;
  policy.deny_cidrs.push_back(*egress::parse_cidr("203.0.113.0/24"));
  if (!(*rules)->add_sandbox(1) || !(*rules)->set_policy(1, policy) ||
      !(*rules)->remove_sandbox(1) || !(*rules)->pools_with_tables() || !(*rules)->remove())
    return 13;
  return 0;
}

TEST(NftRules, WorkWithTheDaemonPastItsFirst1024Fds) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace and nftables";
  testing::TempDir locks("abx-nft-locks");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(rules_work_with_many_fds_open(locks.path()));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespace here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace abx::runtime
