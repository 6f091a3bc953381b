// runtime/layer_diff on a fake overlay upper and lower in a temp dir.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/unique_fd.h"
#include "runtime/layer_diff.h"
#include "temp_dir.h"

namespace abx::runtime::layer_diff {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> shown(const Diff& diff) {
  std::map<std::string, std::string> out;
  for (const auto& e : diff.changes)
    out[e.path] = std::string(change_name(e.change)) + " " + e.kind;
  return out;
}

TEST(LayerDiff, AddedChangedDeletedOpaqueAndNothingFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "a whiteout is a 0/0 device: needs root";
  testing::TempDir dir("abx-layer-diff");
  const fs::path lower = dir.path() / "lower", upper = dir.path() / "upper";
  fs::create_directories(lower / "etc");
  fs::create_directories(lower / "opt/old");
  std::ofstream(lower / "etc/conf") << "a";
  std::ofstream(lower / "etc/gone") << "b";
  std::ofstream(lower / "opt/old/f") << "c";
  fs::create_directories(upper / "etc");
  fs::create_directories(upper / "opt");
  fs::create_directories(upper / "new/deep");
  std::ofstream(upper / "etc/conf") << "changed";
  std::ofstream(upper / "new/deep/f") << "n";
  ASSERT_EQ(::mknod((upper / "etc/gone").c_str(), S_IFCHR | 0600, makedev(0, 0)), 0);
  fs::create_directories(upper / "opt/old");
  ASSERT_EQ(::setxattr((upper / "opt/old").c_str(), "trusted.overlay.opaque", "y", 1, 0), 0);
  fs::create_symlink("/etc", upper / "escape");  // never followed
  UniqueFd up(::open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd low(::open(lower.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto diff = layer_diff::diff(up.get(), {low.get()});
  ASSERT_TRUE(diff);
  EXPECT_EQ(shown(*diff), (std::map<std::string, std::string>{{"/etc/conf", "changed file"},
                                                              {"/etc/gone", "deleted file"},
                                                              {"/new", "added dir"},
                                                              {"/new/deep", "added dir"},
                                                              {"/new/deep/f", "added file"},
                                                              {"/opt/old", "changed dir"},
                                                              {"/escape", "added symlink"}}));
  EXPECT_FALSE(diff->truncated);
}

// A template build's or a snapshot's layer can carry an opaque dir (a dir
// removed and made again): it hides the layers under it, so what the
// sandbox writes there is new, even where a hidden layer has that name.
TEST(LayerDiff, AnOpaqueDirInALowerLayerHidesTheLayersUnderIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "trusted.* xattrs need root";
  testing::TempDir dir("abx-layer-diff");
  const fs::path top = dir.path() / "top", bottom = dir.path() / "bottom",
                 upper = dir.path() / "upper";
  fs::create_directories(bottom / "app");
  std::ofstream(bottom / "app/hidden") << "old";
  std::ofstream(bottom / "app/kept") << "old";
  fs::create_directories(top / "app");
  std::ofstream(top / "app/kept") << "remade";
  ASSERT_EQ(::setxattr((top / "app").c_str(), "trusted.overlay.opaque", "y", 1, 0), 0);
  fs::create_directories(upper / "app");
  std::ofstream(upper / "app/hidden") << "written";
  std::ofstream(upper / "app/kept") << "written";
  UniqueFd up(::open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd t(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd b(::open(bottom.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto diff = layer_diff::diff(up.get(), {t.get(), b.get()});
  ASSERT_TRUE(diff);
  EXPECT_EQ(shown(*diff), (std::map<std::string, std::string>{{"/app/hidden", "added file"},
                                                              {"/app/kept", "changed file"}}));
}

TEST(LayerDiff, BoundsStopTheWalkAndSaySo) {
  testing::TempDir dir("abx-layer-diff");
  fs::path deep = dir.path();
  for (int i = 0; i < 10; ++i) fs::create_directories(deep /= "d");
  UniqueFd up(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto shallow = layer_diff::diff(up.get(), {}, Limits{100, 1 << 20, 3});
  ASSERT_TRUE(shallow);
  EXPECT_TRUE(shallow->truncated);
  auto few = layer_diff::diff(up.get(), {}, Limits{2, 1 << 20, 64});
  ASSERT_TRUE(few);
  EXPECT_TRUE(few->truncated);
  EXPECT_EQ(few->changes.size(), 2u);
}

}  // namespace
}  // namespace abx::runtime::layer_diff
