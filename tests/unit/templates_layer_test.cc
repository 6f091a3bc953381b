// Tar layers onto a template rootfs: ownership shifted, OCI whiteouts applied,
// and nothing a hostile layer names (through its own symlinks, hard links,
// ".." or absolute names) touches a file outside the rootfs.
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tar_fixture.h"
#include "temp_dir.h"
#include "templates/layer.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

using testing::TarEntry;
using testing::write_tar;

class LayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rootfs_ = dir_ / "rootfs";
    fs::create_directory(rootfs_);
  }

  abx::testing::TempDir temp_{"abx-layer-test"};
  fs::path dir_ = temp_.path();
  fs::path rootfs_;
};

TEST_F(LayerTest, ShiftsOwnersAndAppliesWhiteouts) {
  const bool root = ::geteuid() == 0;
  const IdShift shift{root ? 300000u : 0u, root ? 300000u : 0u};
  write_tar(dir_ / "1.tar", {{"etc/", AE_IFDIR, ""},
                             {"etc/gone", AE_IFREG, "x"},
                             {"opaque/", AE_IFDIR, ""},
                             {"opaque/old", AE_IFREG, "old"},
                             {"home/user/", AE_IFDIR, "", 1000}});
  write_tar(dir_ / "2.tar", {{"etc/.wh.gone", AE_IFREG, ""},
                             {"opaque/", AE_IFDIR, ""},
                             {"opaque/.wh..wh..opq", AE_IFREG, ""},
                             {"opaque/new", AE_IFREG, "new"}});
  auto first = apply_layer(dir_ / "1.tar", rootfs_, shift);
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto second = apply_layer(dir_ / "2.tar", rootfs_, shift);
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_FALSE(fs::exists(rootfs_ / "etc/gone"));
  EXPECT_FALSE(fs::exists(rootfs_ / "etc/.wh.gone"));
  EXPECT_FALSE(fs::exists(rootfs_ / "opaque/old"));
  EXPECT_TRUE(fs::exists(rootfs_ / "opaque/new"));
  EXPECT_FALSE(fs::exists(rootfs_ / "opaque/.wh..wh..opq"));
  if (root) {
    struct stat st {};
    ASSERT_EQ(::lstat((rootfs_ / "home/user").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 301000u);
    ASSERT_EQ(::lstat((rootfs_ / "etc").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 300000u);
  }
}

TEST_F(LayerTest, RefusesPathsOutOfTheRoot) {
  write_tar(dir_ / "bad.tar", {{"../escape", AE_IFREG, "x"}});
  auto applied = apply_layer(dir_ / "bad.tar", rootfs_, {});
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error().errnum, EINVAL);
  EXPECT_FALSE(fs::exists(dir_ / "escape"));
}

// A host dir full of files, which no layer may change.
class HostileLayerTest : public LayerTest {
 protected:
  void SetUp() override {
    LayerTest::SetUp();
    host_ = dir_ / "host";
    fs::create_directories(host_ / "sub/deeper");
    for (const char* name : {"file", "sub/a", "sub/deeper/b"})
      std::ofstream(host_ / name) << "host " << name;
    ::chmod(host_.c_str(), 0750);
  }

  // Every host file still there with its content; the dir's mode unchanged.
  void expect_host_untouched() {
    for (const char* name : {"file", "sub/a", "sub/deeper/b"}) {
      std::ifstream in(host_ / name);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(text, std::string("host ") + name) << name;
    }
    std::vector<std::string> names;
    for (const auto& entry : fs::recursive_directory_iterator(host_))
      names.push_back(fs::relative(entry.path(), host_).string());
    EXPECT_EQ(names.size(), 5u);
    struct stat st {};
    ASSERT_EQ(::stat(host_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750u);
    ASSERT_EQ(::stat((host_ / "file").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1u);
  }

  Result<LayerStats> apply(const std::vector<TarEntry>& entries, const std::string& name) {
    write_tar(dir_ / name, entries);
    return apply_layer(dir_ / name, rootfs_, {});
  }

  fs::path host_;
};

TEST_F(HostileLayerTest, WhiteoutsThroughASymlinkStayInTheLayer) {
  auto first = apply({{"x", AE_IFLNK, host_.string()},
                      {"rel", AE_IFLNK, "../../../../../../../.." + host_.string()},
                      {"root", AE_IFLNK, "/"}},
                     "1.tar");
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto second = apply({{"x/.wh.file", AE_IFREG, ""},
                       {"x/sub/.wh..wh..opq", AE_IFREG, ""},
                       {"x/.wh.sub", AE_IFREG, ""},
                       {"rel/.wh.file", AE_IFREG, ""},
                       {"rel/sub/.wh..wh..opq", AE_IFREG, ""},
                       {"root" + host_.string() + "/.wh.file", AE_IFREG, ""}},
                      "2.tar");
  ASSERT_TRUE(second.ok()) << second.error().message();
  expect_host_untouched();
  EXPECT_TRUE(fs::is_symlink(rootfs_ / "x"));
}

TEST_F(HostileLayerTest, WhiteoutsInTheSameTarAsTheSymlinkStayInTheLayer) {
  auto applied = apply({{"x", AE_IFLNK, host_.string()},
                        {"x/.wh.file", AE_IFREG, ""},
                        {"x/sub/.wh..wh..opq", AE_IFREG, ""}},
                       "1.tar");
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  expect_host_untouched();
}

TEST_F(HostileLayerTest, WritesThroughASymlinkLandInsideTheLayer) {
  // In-root resolution: the symlink's target is taken inside the rootfs, where it exists.
  fs::create_directories(rootfs_ / host_.relative_path());
  auto applied = apply({{"x", AE_IFLNK, host_.string()},
                        {"x/file", AE_IFREG, "evil"},
                        {"x/new", AE_IFREG, "evil"},
                        {"x/sub/", AE_IFDIR, "", 0, {}, 0777},
                        {"x/link", AE_IFLNK, "/etc/passwd"}},
                       "1.tar");
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  expect_host_untouched();
  EXPECT_FALSE(fs::exists(host_ / "new"));
  EXPECT_TRUE(fs::exists(rootfs_ / host_.relative_path() / "new"));
}

TEST_F(HostileLayerTest, WritesThroughADanglingSymlinkFailNamingTheMember) {
  auto applied = apply({{"x", AE_IFLNK, host_.string()}, {"x/new", AE_IFREG, "evil"}}, "1.tar");
  ASSERT_FALSE(applied.ok());
  EXPECT_NE(applied.error().message().find("'x/new'"), std::string::npos)
      << applied.error().message();
  EXPECT_FALSE(fs::exists(host_ / "new"));
  expect_host_untouched();
}

TEST_F(HostileLayerTest, ADirMemberNamedLikeASymlinkReplacesTheLinkNotItsTarget) {
  auto applied =
      apply({{"x", AE_IFLNK, host_.string()}, {"x", AE_IFDIR, "", 0, {}, 0777}}, "1.tar");
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  expect_host_untouched();
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(rootfs_ / "x")));
}

TEST_F(HostileLayerTest, HardLinksOutAreRefusedNamingTheMember) {
  for (const std::string& target : std::vector<std::string>{"../host/file", "a/../../host/file"}) {
    auto applied = apply({{"h", AE_IFREG, "", 0, target}}, "1.tar");
    ASSERT_FALSE(applied.ok()) << target;
    EXPECT_EQ(applied.error().errnum, EINVAL);
    EXPECT_NE(applied.error().message().find("'h'"), std::string::npos)
        << applied.error().message();
  }
  // Absolute targets and targets through the layer's symlinks resolve inside it, where
  // there is no such file.
  for (const std::string& target : {host_.string() + "/file", std::string("x/file")}) {
    auto applied =
        apply({{"x", AE_IFLNK, host_.string()}, {"h", AE_IFREG, "", 0, target}}, "2.tar");
    ASSERT_FALSE(applied.ok()) << target;
    EXPECT_NE(applied.error().message().find("'h'"), std::string::npos)
        << applied.error().message();
  }
  expect_host_untouched();
}

TEST_F(HostileLayerTest, DotDotNamesAreRefusedAbsoluteNamesLandInside) {
  for (const std::string& name :
       std::vector<std::string>{"../escape", "a/../../escape", "x/../../escape"}) {
    auto applied = apply({{name, AE_IFREG, "x"}}, "1.tar");
    ASSERT_FALSE(applied.ok()) << name;
    EXPECT_NE(applied.error().message().find("'" + name + "'"), std::string::npos)
        << applied.error().message();
  }
  EXPECT_FALSE(fs::exists(dir_ / "escape"));
  auto absolute = apply({{host_.string() + "/file", AE_IFREG, "evil"}}, "2.tar");
  ASSERT_TRUE(absolute.ok()) << absolute.error().message();
  EXPECT_TRUE(fs::exists(rootfs_ / host_.relative_path() / "file"));
  expect_host_untouched();
}

TEST_F(HostileLayerTest, WhiteoutsOfDotDotAreRefused) {
  fs::create_directories(rootfs_ / "keep");
  for (const std::string& name :
       std::vector<std::string>{".wh..", ".wh...", "keep/.wh...", ".wh."}) {
    auto applied = apply({{name, AE_IFREG, ""}}, "1.tar");
    ASSERT_FALSE(applied.ok()) << name;
    EXPECT_NE(applied.error().message().find("'" + name + "'"), std::string::npos)
        << applied.error().message();
  }
  EXPECT_TRUE(fs::is_directory(rootfs_ / "keep"));
  expect_host_untouched();
}

TEST_F(HostileLayerTest, DeviceNodesAreSkipped) {
  auto applied = apply({{"dev/", AE_IFDIR, ""}, {"dev/sda", AE_IFCHR, ""}}, "1.tar");
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  EXPECT_TRUE(fs::is_directory(rootfs_ / "dev"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(rootfs_ / "dev/sda")));
}

TEST_F(HostileLayerTest, IdsBeyondTheSandboxRangeBecomeNobody) {
  if (::geteuid() != 0) GTEST_SKIP() << "ownership needs root";
  write_tar(dir_ / "1.tar", {{"f", AE_IFREG, "x", 0xFFFFFFFFu - 99999u}});
  auto applied = apply_layer(dir_ / "1.tar", rootfs_, IdShift{100000, 100000});
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  struct stat st {};
  ASSERT_EQ(::lstat((rootfs_ / "f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 100000u + 65534u);
}

}  // namespace
}  // namespace abx::templates
