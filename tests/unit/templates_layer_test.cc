// Tar layers onto a template rootfs: ownership shifted, OCI whiteouts applied.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "templates/layer.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

struct TarEntry {
  std::string path;
  mode_t type;  // AE_IFREG, AE_IFDIR
  std::string content;
  uid_t uid = 0;
};

void write_tar(const fs::path& tar, const std::vector<TarEntry>& entries) {
  archive* out = archive_write_new();
  archive_write_set_format_pax_restricted(out);
  ASSERT_EQ(archive_write_open_filename(out, tar.c_str()), ARCHIVE_OK);
  for (const auto& item : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, item.path.c_str());
    archive_entry_set_filetype(entry, item.type);
    archive_entry_set_perm(entry, item.type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_uid(entry, item.uid);
    archive_entry_set_gid(entry, item.uid);
    archive_entry_set_size(entry, static_cast<la_int64_t>(item.content.size()));
    archive_write_header(out, entry);
    archive_write_data(out, item.content.data(), item.content.size());
    archive_entry_free(entry);
  }
  archive_write_close(out);
  archive_write_free(out);
}

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

}  // namespace
}  // namespace abx::templates
