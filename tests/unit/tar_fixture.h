// Tar archives for the template unit tests: what a layer or a docker-save
// archive holds, down to the kinds of entry a hostile layer uses (symlinks,
// hard links, device nodes, foreign owners).
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace abx::testing {

struct TarEntry {
  std::string path;
  mode_t type = AE_IFREG;  // AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR
  std::string content;     // a symlink's target
  uid_t uid = 0;
  std::string hardlink = {};
  mode_t perm = 0;  // 0: 0755 for dirs, 0644 otherwise
};

inline void write_tar(const std::filesystem::path& tar, const std::vector<TarEntry>& entries) {
  archive* out = archive_write_new();
  archive_write_set_format_pax_restricted(out);
  ASSERT_EQ(archive_write_open_filename(out, tar.c_str()), ARCHIVE_OK);
  for (const auto& item : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, item.path.c_str());
    archive_entry_set_filetype(entry, item.type);
    archive_entry_set_perm(entry, item.perm ? item.perm : item.type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_uid(entry, item.uid);
    archive_entry_set_gid(entry, item.uid);
    const bool data = item.type == AE_IFREG && item.hardlink.empty();
    if (item.type == AE_IFLNK) archive_entry_set_symlink(entry, item.content.c_str());
    if (item.type == AE_IFCHR) archive_entry_set_rdev(entry, makedev(8, 0));
    if (!item.hardlink.empty()) archive_entry_set_hardlink(entry, item.hardlink.c_str());
    archive_entry_set_size(entry, data ? static_cast<la_int64_t>(item.content.size()) : 0);
    ASSERT_EQ(archive_write_header(out, entry), ARCHIVE_OK) << item.path;
    if (data) archive_write_data(out, item.content.data(), item.content.size());
    archive_entry_free(entry);
  }
  archive_write_close(out);
  archive_write_free(out);
}

// Regular files only: enough for a docker-save archive and its one layer.
inline void write_tar(const std::filesystem::path& tar,
                      const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<TarEntry> entries;
  for (const auto& [path, content] : files) entries.push_back({path, AE_IFREG, content});
  write_tar(tar, entries);
}

}  // namespace abx::testing
