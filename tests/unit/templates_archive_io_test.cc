// The shared libarchive helpers: member names stay inside, and the one safe
// extractor reports in its caller's words.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/fd_io.h"
#include "temp_dir.h"
#include "templates/archive_io.h"

namespace abx::templates::archive_io {
namespace {

namespace fs = std::filesystem;

// The file's text, or what went wrong reading it (which then fails the comparison).
std::string text_of(const fs::path& path) {
  auto text = read_file(path);
  return text.ok() ? text.value() : text.error().message();
}

TEST(ArchiveIoNames, RelativeInsideNormalizesOrRefuses) {
  EXPECT_EQ(relative_inside("./a/b"), "a/b");
  EXPECT_EQ(relative_inside("a//b/"), "a/b");
  EXPECT_EQ(relative_inside("."), "");
  EXPECT_EQ(relative_inside("./"), "");
  EXPECT_EQ(relative_inside("/etc/passwd"), std::nullopt);
  EXPECT_EQ(relative_inside("a/../../b"), std::nullopt);
  EXPECT_EQ(relative_inside(".."), std::nullopt);
  EXPECT_EQ(relative_inside(""), std::nullopt);
}

struct Member {
  std::string name;
  mode_t type = AE_IFREG;
  std::string content;
  std::string hardlink;
};

class ArchiveIoExtract : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(root_ / "out"); }

  fs::path tar_of(const std::vector<Member>& members) {
    const fs::path tar = root_ / "in.tar";
    Writer out = tar_file_writer();
    EXPECT_TRUE(open_file_for_writing(out.get(), tar));
    for (const Member& member : members) {
      archive_entry* entry = archive_entry_new();
      archive_entry_set_pathname(entry, member.name.c_str());
      archive_entry_set_filetype(entry, member.type);
      archive_entry_set_perm(entry, 0644);
      if (!member.hardlink.empty()) archive_entry_set_hardlink(entry, member.hardlink.c_str());
      const bool link = member.type == AE_IFLNK;  // `content` is its target
      if (link) archive_entry_set_symlink(entry, member.content.c_str());
      archive_entry_set_size(entry, link ? 0 : static_cast<la_int64_t>(member.content.size()));
      archive_write_header(out.get(), entry);
      if (!link) archive_write_data(out.get(), member.content.data(), member.content.size());
      archive_entry_free(entry);
    }
    archive_write_close(out.get());
    return tar;
  }

  Status extract_tar(const fs::path& tar, bool files_dirs_links) {
    Reader reader = tar_reader();
    EXPECT_TRUE(open_file(reader.get(), tar));
    ExtractOptions options;
    options.files_dirs_links = files_dirs_links;
    options.failed = [](Stage, const std::string& why, int errnum, const std::string& name) {
      return Error{"test extract", errnum, name + ": " + why};
    };
    options.outside = [](const std::string& name, const std::string& link) {
      return Error::with_message("outside: " + name + (link.empty() ? "" : " -> " + link));
    };
    return extract(reader.get(), root_ / "out", options);
  }

  abx::testing::TempDir temp_{"abx-archive-io"};
  fs::path root_ = temp_.path();
};

TEST_F(ArchiveIoExtract, UnpacksFilesDirsAndHardLinks) {
  const fs::path tar = tar_of({{"./dir", AE_IFDIR, "", ""},
                               {"dir/a.txt", AE_IFREG, "alpha", ""},
                               {"dir/b.txt", AE_IFREG, "", "dir/a.txt"}});
  ASSERT_TRUE(extract_tar(tar, true).ok());
  EXPECT_EQ(text_of(root_ / "out/dir/a.txt"), "alpha");
  EXPECT_TRUE(fs::equivalent(root_ / "out/dir/a.txt", root_ / "out/dir/b.txt"));
}

TEST_F(ArchiveIoExtract, RefusesNamesAndLinksOutsideInTheCallersWords) {
  auto named = extract_tar(tar_of({{"../escape", AE_IFREG, "x", ""}}), true);
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.error().message(), "outside: ../escape");
  auto linked = extract_tar(tar_of({{"ok", AE_IFREG, "", "/etc/passwd"}}), true);
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().message(), "outside: ok -> /etc/passwd");
  EXPECT_FALSE(fs::exists(root_ / "escape"));
}

// A context or image tar that plants "x -> <host dir>" and then writes "x/file"
// writes inside the dir (where x's target does not exist) or fails: never on the host.
TEST_F(ArchiveIoExtract, WritesThroughAPlantedSymlinkNeverReachTheHost) {
  fs::create_directories(root_ / "host");
  std::ofstream(root_ / "host/file") << "host";
  const std::string host = (root_ / "host").string();
  auto written =
      extract_tar(tar_of({{"x", AE_IFLNK, host, ""}, {"x/file", AE_IFREG, "evil", ""}}), false);
  EXPECT_FALSE(written.ok());
  EXPECT_NE(written.error().message().find("x/file"), std::string::npos)
      << written.error().message();
  auto linked =
      extract_tar(tar_of({{"y", AE_IFLNK, host, ""}, {"h", AE_IFREG, "", "y/file"}}), false);
  EXPECT_FALSE(linked.ok());
  EXPECT_EQ(text_of(root_ / "host/file"), "host");
  EXPECT_EQ(fs::hard_link_count(root_ / "host/file"), 1u);
}

TEST_F(ArchiveIoExtract, SkipsSpecialFilesWhenAskedTo) {
  const fs::path tar = tar_of({{"fifo", AE_IFIFO, "", ""}, {"file", AE_IFREG, "f", ""}});
  ASSERT_TRUE(extract_tar(tar, true).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_ / "out/fifo")));
  EXPECT_TRUE(fs::exists(root_ / "out/file"));
}

TEST_F(ArchiveIoExtract, ATruncatedMemberIsAReadFailureNamingIt) {
  const fs::path tar = tar_of({{"big", AE_IFREG, std::string(100000, 'b'), ""}});
  fs::resize_file(tar, 5000);
  Reader reader = tar_reader();
  ASSERT_TRUE(open_file(reader.get(), tar));
  std::vector<std::pair<Stage, std::string>> seen;
  ExtractOptions options;
  options.failed = [&](Stage stage, const std::string&, int, const std::string& name) {
    seen.emplace_back(stage, name);
    return Error::with_message("failed");
  };
  options.outside = [](const std::string&, const std::string&) { return Error::with_message(""); };
  EXPECT_FALSE(extract(reader.get(), root_ / "out", options).ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, Stage::kData);
  EXPECT_EQ(seen[0].second, "big");
}

}  // namespace
}  // namespace abx::templates::archive_io
