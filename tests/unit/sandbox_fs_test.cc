#include "runtime/sandbox_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace abx::runtime::sandbox_fs {
namespace {

namespace fs = std::filesystem;

// A sandbox whose root is a plain temp dir; only root_fd and the id mapping
// matter to sandbox_fs. Sandbox uid n is host uid 100000 + n when running as
// root, so ownership checks are meaningful; unprivileged, chown is skipped.
class FakeSandbox : public Sandbox {
 public:
  explicit FakeSandbox(const fs::path& root)
      : root_fd_(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) {}
  const SandboxRecord& record() const override { return record_; }
  Result<Process> spawn(const ProcessSpec&) override { return Error{"spawn", ENOSYS, {}}; }
  Status signal(int, int) override { return Error{"signal", ENOSYS, {}}; }
  int root_fd() const override { return root_fd_.get(); }
  uid_t host_uid(uint32_t id) const override {
    return ::geteuid() == 0 ? 100000 + id : ::geteuid();
  }
  gid_t host_gid(uint32_t id) const override {
    return ::geteuid() == 0 ? 100000 + id : ::getegid();
  }
  Usage usage() const override { return {}; }

 private:
  SandboxRecord record_;
  UniqueFd root_fd_;
};

std::string read_all(int fd) {
  std::string out(4096, '\0');
  const ssize_t n = ::read(fd, out.data(), out.size());
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

// Writes `text` to `path` through sandbox_fs, as sandbox user `uid`.
Status put(const Sandbox& sb, const std::string& path, uint32_t uid, const std::string& text = {}) {
  auto writer = start_write(sb, path, uid);
  if (!writer) return writer.error();
  if (auto s = writer->write(text); !s) return s;
  return writer->finish();
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class SandboxFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "abx-fs-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
    root_ = base_ / "root";
    outside_ = base_ / "outside";
    fs::create_directories(root_ / "home/user");
    fs::create_directories(outside_);
    write_file(root_ / "etc/passwd", "sandbox passwd\n");
    write_file(outside_ / "secret", "host secret\n");
    sb_ = std::make_unique<FakeSandbox>(root_);
    // As in a template: the home is the user's, the rest root's.
    ASSERT_EQ(::chown(root_.c_str(), sb_->host_uid(0), sb_->host_gid(0)), 0);
    ASSERT_EQ(::chown((root_ / "home/user").c_str(), sb_->host_uid(1000), sb_->host_gid(1000)), 0);
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path base_, root_, outside_;
  std::unique_ptr<FakeSandbox> sb_;
};

TEST_F(SandboxFsTest, DotDotTraversalStaysInsideRoot) {
  auto fd = open_read_as(*sb_, "/home/user/../../../../etc/passwd", 0, 0);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  EXPECT_EQ(read_all(fd->get()), "sandbox passwd\n");

  auto relative = open_read_as(*sb_, absolute_path("../../etc/passwd", "/home/user"), 0, 0);
  ASSERT_TRUE(relative.ok()) << relative.error().message();
  EXPECT_EQ(read_all(relative->get()), "sandbox passwd\n");
}

TEST_F(SandboxFsTest, AbsoluteSymlinkResolvesInsideRoot) {
  fs::create_symlink("/etc/passwd", root_ / "home/user/link");
  auto fd = open_read_as(*sb_, "/home/user/link", 0, 0);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  EXPECT_EQ(read_all(fd->get()), "sandbox passwd\n");

  // A symlink aimed at a host path that exists only outside the root.
  fs::create_symlink(outside_ / "secret", root_ / "home/user/escape");
  auto escaped = open_read_as(*sb_, "/home/user/escape", 0, 0);
  ASSERT_FALSE(escaped.ok());
  EXPECT_EQ(escaped.error().errnum, ENOENT);
  EXPECT_EQ(escaped.error().detail, "/home/user/escape");

  // Writing through it creates nothing outside either.
  fs::create_symlink(outside_, root_ / "home/user/outdir");
  EXPECT_FALSE(
      put(*sb_, "/home/user/outdir/new", 1000).ok());  // the symlink dangles inside the root
  EXPECT_FALSE(fs::exists(outside_ / "new"));
}

TEST_F(SandboxFsTest, SymlinkLoopFailsCleanly) {
  fs::create_symlink("b", root_ / "home/user/a");
  fs::create_symlink("a", root_ / "home/user/b");
  auto fd = open_read_as(*sb_, "/home/user/a", 0, 0);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().errnum, ELOOP);
  EXPECT_EQ(fd.error().step, "open");
}

TEST_F(SandboxFsTest, ReadRejectsDirectories) {
  auto fd = open_read_as(*sb_, "/home/user", 0, 0);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().errnum, EISDIR);
}

TEST_F(SandboxFsTest, WriteCreatesParentsOwnedByUser) {
  auto written = put(*sb_, "/home/user/a/b/c.txt", 1000, "hi");
  ASSERT_TRUE(written.ok()) << written.error().message();

  struct stat st {};
  ASSERT_EQ(::stat((root_ / "home/user/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, sb_->host_uid(1000));
  ASSERT_EQ(::stat((root_ / "home/user/a/b/c.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_uid, sb_->host_uid(1000));
  EXPECT_EQ(st.st_size, 2);

  ASSERT_TRUE(put(*sb_, "/home/user/a/b/c.txt", 1000).ok());
  EXPECT_EQ(fs::file_size(root_ / "home/user/a/b/c.txt"), 0u);  // truncated
}

TEST_F(SandboxFsTest, WritesHaveTheOwnersPermissions) {
  if (::geteuid() != 0) GTEST_SKIP() << "unprivileged: every sandbox id is us";
  ASSERT_EQ(::chown((root_ / "etc").c_str(), sb_->host_uid(0), sb_->host_gid(0)), 0);
  auto denied = put(*sb_, "/etc/new", 1000);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().errnum, EACCES);
  ASSERT_TRUE(put(*sb_, "/etc/new", 0).ok());
  struct stat st {};
  ASSERT_EQ(::stat((root_ / "etc/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, sb_->host_uid(0));
  EXPECT_EQ(::getuid(), 0u);  // the thread's ids are restored
  ASSERT_TRUE(put(*sb_, "/etc/new2", 0).ok());
}

// The link itself, and its target as envd describes it: resolved inside the
// root to an absolute path (the link's own when it dangles).
TEST_F(SandboxFsTest, StatDescribesSymlinksWithoutFollowing) {
  fs::create_symlink("../../etc/passwd", root_ / "home/user/link");
  auto info = stat(*sb_, "/home/user/link");
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->type, FileType::kSymlink);
  EXPECT_EQ(info->symlink_target, "/etc/passwd");
  EXPECT_EQ(info->target_type, FileType::kFile);
  EXPECT_EQ(info->name, "link");
  EXPECT_EQ(info->path, "/home/user/link");

  fs::create_symlink(outside_ / "secret", root_ / "home/user/escape");  // dangles inside
  auto dangling = stat(*sb_, "/home/user/escape");
  ASSERT_TRUE(dangling.ok()) << dangling.error().message();
  EXPECT_EQ(dangling->symlink_target, "/home/user/escape");
  EXPECT_EQ(dangling->target_type, FileType::kOther);

  auto missing = stat(*sb_, "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
  EXPECT_EQ(missing.error().detail, "/nope");
}

TEST_F(SandboxFsTest, ListDepthTwoDoesNotFollowSymlinkedDirs) {
  ASSERT_TRUE(make_dir(*sb_, "/home/user/d/e", 1000).ok());
  ASSERT_TRUE(put(*sb_, "/home/user/d/e/deep.txt", 1000).ok());
  ASSERT_TRUE(put(*sb_, "/home/user/d/top.txt", 1000).ok());
  fs::create_symlink("/", root_ / "home/user/d/rootlink");

  auto entries = list_dir(*sb_, "/home/user/d", 2);
  ASSERT_TRUE(entries.ok()) << entries.error().message();
  std::vector<std::string> paths;
  for (const auto& e : *entries) paths.push_back(e.path);
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<std::string>{"/home/user/d/e", "/home/user/d/e/deep.txt",
                                             "/home/user/d/rootlink", "/home/user/d/top.txt"}));
  for (const auto& e : *entries) {
    if (e.name == "top.txt") {
      EXPECT_EQ(e.type, FileType::kFile);
      EXPECT_EQ(e.owner, ::geteuid() == 0 ? "user" : "root");  // unprivileged: both map to us
    }
    if (e.name == "e") {
      EXPECT_EQ(e.type, FileType::kDirectory);
    }
  }

  auto shallow = list_dir(*sb_, "/home/user/d", 1);
  ASSERT_TRUE(shallow.ok());
  EXPECT_EQ(shallow->size(), 3u);
}

TEST_F(SandboxFsTest, MakeDirReportsExisting) {
  ASSERT_TRUE(make_dir(*sb_, "/home/user/x/y", 1000).ok());
  auto again = make_dir(*sb_, "/home/user/x/y", 1000);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().errnum, EEXIST);
  EXPECT_EQ(again.error().step, "mkdir");
}

TEST_F(SandboxFsTest, RemoveTreeLeavesSymlinkTargetsAlone) {
  ASSERT_TRUE(put(*sb_, "/home/user/t/a/b/f", 1000).ok());
  fs::create_symlink(outside_, root_ / "home/user/t/a/out");
  fs::create_symlink("/etc", root_ / "home/user/t/etc");
  ASSERT_TRUE(remove(*sb_, "/home/user/t").ok());
  EXPECT_FALSE(fs::exists(root_ / "home/user/t"));
  EXPECT_TRUE(fs::exists(outside_ / "secret"));
  EXPECT_TRUE(fs::exists(root_ / "etc/passwd"));

  auto missing = remove(*sb_, "/home/user/t");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
  EXPECT_FALSE(remove(*sb_, "/").ok());
}

TEST_F(SandboxFsTest, MoveRenamesWithinRoot) {
  ASSERT_TRUE(put(*sb_, "/home/user/from.txt", 1000).ok());
  ASSERT_TRUE(move(*sb_, "/home/user/from.txt", "/home/user/../../home/../to.txt").ok());
  EXPECT_FALSE(fs::exists(root_ / "home/user/from.txt"));
  EXPECT_TRUE(fs::exists(root_ / "to.txt"));
}

TEST(SandboxFsPaths, AbsolutePathExpandsHomeAndNormalises) {
  EXPECT_EQ(absolute_path("", "/home/user"), "/home/user");
  EXPECT_EQ(absolute_path("~", "/home/user"), "/home/user");
  EXPECT_EQ(absolute_path("~/x", "/home/user"), "/home/user/x");
  EXPECT_EQ(absolute_path("a/./b//c/", "/home/user"), "/home/user/a/b/c");
  EXPECT_EQ(absolute_path("/a/../b", "/home/user"), "/a/../b");
  EXPECT_EQ(absolute_path("/", "/home/user"), "/");
  EXPECT_EQ(absolute_path("//", "/home/user"), "/");
}

// envd's metadata: user.e2b.* xattrs, replaced as a whole by each write.
TEST_F(SandboxFsTest, WriteKeepsMetadataAndAnOverwriteClearsIt) {
  if (::setxattr(root_.c_str(), "user.probe", "1", 1, 0) != 0 && errno == ENOTSUP)
    GTEST_SKIP() << "the test dir's filesystem keeps no user xattrs";
  auto writer = start_write(*sb_, "/home/user/m.txt", 0, 0, {{"author", "mish"}});
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE(writer->write("x").ok());
  ASSERT_TRUE(writer->finish().ok());
  auto info = stat(*sb_, "/home/user/m.txt");
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->metadata, (std::map<std::string, std::string>{{"author", "mish"}}));
  auto listed = list_dir(*sb_, "/home/user", 1);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().metadata, info->metadata);

  auto again = start_write(*sb_, "/home/user/m.txt", 0);
  ASSERT_TRUE(again.ok()) << again.error().message();
  ASSERT_TRUE(again->finish().ok());
  auto cleared = stat(*sb_, "/home/user/m.txt");
  ASSERT_TRUE(cleared.ok());
  EXPECT_TRUE(cleared->metadata.empty());
}

}  // namespace
}  // namespace abx::runtime::sandbox_fs
