// The CLI's tar writer (common/dir_tar.cc, no libarchive): what it packs,
// libarchive (the daemon's reader) and GNU tar read back whole, long names,
// link targets and large ids included.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "common/dir_tar.h"
#include "temp_dir.h"
#include "templates/archive_io.h"

namespace abx {
namespace {

namespace fs = std::filesystem;

struct DirTarEntry {
  char type = '?';
  std::string content, link;
  int64_t uid = -1;
  unsigned mode = 0;
};

std::map<std::string, DirTarEntry> read_dir_tar_back(const fs::path& tar) {
  std::map<std::string, DirTarEntry> entries;
  auto reader = templates::archive_io::tar_reader();
  EXPECT_TRUE(templates::archive_io::open_file(reader.get(), tar));
  archive_entry* entry = nullptr;
  while (archive_read_next_header(reader.get(), &entry) == ARCHIVE_OK) {
    DirTarEntry& got = entries[archive_entry_pathname(entry)];
    const auto type = archive_entry_filetype(entry);
    got.type = type == AE_IFREG ? 'f' : type == AE_IFDIR ? 'd' : type == AE_IFLNK ? 'l' : '?';
    if (const char* link = archive_entry_symlink(entry)) got.link = link;
    got.uid = archive_entry_uid(entry);
    got.mode = archive_entry_perm(entry);
    char buffer[4096];
    for (la_ssize_t n; (n = archive_read_data(reader.get(), buffer, sizeof buffer)) > 0;)
      got.content.append(buffer, static_cast<size_t>(n));
  }
  return entries;
}

void write_dir_tar_input(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(DirTar, PacksFilesDirsLinksAndExtrasAsLibarchiveReadsThem) {
  testing::TempDir dir("abx-dir-tar-test");
  const fs::path src = dir.path() / "src";
  const std::string deep = "a-directory-name-of-sixty-characters-to-pass-ustar-s-100-limit";
  fs::create_directories(src / deep / deep);
  write_dir_tar_input(src / "small.txt", "hello\n");
  const std::string big(70000, 'x');  // over one flush of the writer's buffer
  write_dir_tar_input(src / deep / deep / "big.bin", big);
  ::chmod((src / "small.txt").c_str(), 0751);
  fs::create_symlink("/a/target/" + deep + "/" + deep, src / "link");
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::lchown((src / "small.txt").c_str(), 3000000, 3000000), 0);
  }
  const fs::path tar = dir.path() / "out.tar";
  ASSERT_TRUE(write_dir_tar(src, {{"Sandboxfile", "FROM host\n"}}, tar));

  auto entries = read_dir_tar_back(tar);
  EXPECT_EQ(entries["small.txt"].content, "hello\n");
  EXPECT_EQ(entries["small.txt"].mode, 0751u);
  if (root) {
    EXPECT_EQ(entries["small.txt"].uid, 3000000);
  }
  EXPECT_EQ(entries[deep + "/"].type, 'd');
  EXPECT_EQ(entries[deep + "/" + deep + "/big.bin"].content, big);
  EXPECT_EQ(entries["link"].type, 'l');
  EXPECT_EQ(entries["link"].link, "/a/target/" + deep + "/" + deep);
  EXPECT_EQ(entries["Sandboxfile"].content, "FROM host\n");
  EXPECT_EQ(entries.size(), 6u);
  // GNU tar agrees (it checks every header's checksum).
  const std::string list = "tar -tf " + tar.string() + " > " + (dir.path() / "list").string();
  EXPECT_EQ(std::system(list.c_str()), 0);
}

TEST(DirTar, NamesWhatItCannotRead) {
  testing::TempDir dir("abx-dir-tar-test");
  auto st = write_dir_tar(dir.path() / "missing", {}, dir.path() / "out.tar");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("missing"), std::string::npos);
}

}  // namespace
}  // namespace abx
