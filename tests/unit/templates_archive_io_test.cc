// The shared libarchive helpers: member names stay inside, and the one safe
// extractor reports in its caller's words.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
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
      archive_entry_set_size(entry, static_cast<la_int64_t>(member.content.size()));
      archive_write_header(out.get(), entry);
      archive_write_data(out.get(), member.content.data(), member.content.size());
      archive_entry_free(entry);
    }
    archive_write_close(out.get());
    return tar;
  }

  Status extract_tar(const fs::path& tar, bool files_dirs_links) {
    Reader reader = tar_reader();
    EXPECT_TRUE(open_file(reader.get(), tar));
    ExtractOptions options;
    options.disk_options = ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT;
    options.files_dirs_links = files_dirs_links;
    options.failed = [](Stage, archive* a, const std::string& name) {
      return error("test extract", a, name);
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
  options.failed = [&](Stage stage, archive*, const std::string& name) {
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
