#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/root_paths.h"
#include "temp_dir.h"

namespace abx::runtime::root_paths {
namespace {

namespace fs = std::filesystem;
using abx::testing::TempDir;

// A template root ("root") beside a dir standing for the host ("host"): the
// links a hostile image plants point there, and nothing may appear in it.
class RootPathsTest : public ::testing::Test {
 protected:
  RootPathsTest() : dir_("abx-root-paths-test") {
    fs::create_directories(root() / "etc");
    fs::create_directories(host());
    root_fd_ = UniqueFd(::open(root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  fs::path root() const { return dir_.path() / "root"; }
  fs::path host() const { return dir_.path() / "host"; }
  int fd() const { return root_fd_.get(); }
  void link(const std::string& target, const std::string& at) {
    fs::create_symlink(target, root() / at);
  }
  bool host_is_empty() const { return fs::is_empty(host()); }

 private:
  TempDir dir_;
  UniqueFd root_fd_;
};

TEST_F(RootPathsTest, AbsoluteLinkOutIsMadeInsideTheRoot) {
  link("/oldroot" + host().string() + "/made", "tmp");
  auto made = make(fd(), "/tmp", Kind::kDirectory, 0755, O_PATH | O_DIRECTORY);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE(host_is_empty());
  EXPECT_TRUE(fs::is_directory(root() / "oldroot" / host().relative_path() / "made"));
}

TEST_F(RootPathsTest, DotDotChainStopsAtTheRoot) {
  link("../../../../../../../../../" + host().relative_path().string() + "/x", "etc/resolv.conf");
  auto made = make(fd(), "/etc/resolv.conf", Kind::kFile, 0644, O_PATH);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE(host_is_empty());
  EXPECT_TRUE(fs::is_regular_file(root() / host().relative_path() / "x"));
}

TEST_F(RootPathsTest, LinkedParentsResolveInsideTheRoot) {
  link(host().string(), "home");
  auto made = make(fd(), "/home/user", Kind::kDirectory, 0755, O_PATH | O_DIRECTORY);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE(host_is_empty());
  EXPECT_TRUE(fs::is_directory(root() / host().relative_path() / "user"));
}

TEST_F(RootPathsTest, ExistingDirectoryIsOpenedAsItIs) {
  fs::create_directories(root() / "tmp");
  auto made = make(fd(), "/tmp", Kind::kDirectory, 01777, O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(made) << made.error().message();
  struct stat st {};
  ASSERT_EQ(::fstat(made->get(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // made by create_directories; left alone
}

TEST_F(RootPathsTest, ProcPathIsTheRootsOwn) {
  // This root has no /proc of the kernel's: the path is made inside it.
  link("/proc/self/root" + host().string(), "tmp");
  auto made = make(fd(), "/tmp", Kind::kDirectory, 0755, O_PATH | O_DIRECTORY);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE(fs::is_directory(root() / "proc/self/root" / host().relative_path()));
  EXPECT_TRUE(host_is_empty());
}

TEST_F(RootPathsTest, LoopIsRefused) {
  link("loop", "loop");
  auto loop = make(fd(), "/loop", Kind::kDirectory, 0755, O_PATH | O_DIRECTORY);
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error().errnum, ELOOP);
}

TEST_F(RootPathsTest, RealMagicLinkIsRefused) {
  // A root whose /proc is the kernel's: /proc/self/root is a magic link.
  UniqueFd slash(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto opened = open(slash.get(), "/proc/self/root/etc", O_PATH);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().errnum, ELOOP);
}

TEST_F(RootPathsTest, NoSymlinksRefusesALinkedKernelDir) {
  link(host().string(), "proc");
  auto made =
      make(fd(), "/proc", Kind::kDirectory, 0555, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().errnum, ELOOP);
  EXPECT_TRUE(host_is_empty());
}

TEST_F(RootPathsTest, FileExpectedWhereADirectoryIs) {
  fs::create_directories(root() / "etc/hosts");
  auto made = make(fd(), "/etc/hosts", Kind::kFile, 0644, O_PATH);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().errnum, EISDIR);
}

}  // namespace
}  // namespace abx::runtime::root_paths
