// What the template store's unit tests share: a runtime that makes no
// sandboxes (the store only asks for id mappings), a tar of regular files,
// and a file's bytes.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/runtime.h"

namespace abx::templates::testing {

namespace fs = std::filesystem;

// The store only asks a runtime for id mappings and to drain its pool.
class NoSandboxRuntime : public runtime::Runtime {
 public:
  Result<std::unique_ptr<runtime::Sandbox>> create(const runtime::SandboxSpec&) override {
    return Error{"create", ENOSYS, {}};
  }
  Result<std::unique_ptr<runtime::Sandbox>> adopt(const runtime::SandboxRecord&) override {
    return Error{"adopt", ENOSYS, {}};
  }
  Status destroy(const runtime::SandboxRecord&) override { return {}; }
  void sweep_orphans(const std::vector<std::string>&) override {}
  uid_t host_uid(uint32_t) const override { return ::geteuid(); }
  gid_t host_gid(uint32_t) const override { return ::getegid(); }
  std::vector<std::string> warnings() const override { return {}; }
};

// Regular files only: enough for a docker-save archive and its one layer.
inline void write_tar(const fs::path& tar,
                      const std::vector<std::pair<std::string, std::string>>& files) {
  archive* out = archive_write_new();
  archive_write_set_format_pax_restricted(out);
  ASSERT_EQ(archive_write_open_filename(out, tar.c_str()), ARCHIVE_OK);
  for (const auto& [path, content] : files) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, path.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_size(entry, static_cast<la_int64_t>(content.size()));
    archive_write_header(out, entry);
    archive_write_data(out, content.data(), content.size());
    archive_entry_free(entry);
  }
  archive_write_close(out);
  archive_write_free(out);
}

inline std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace abx::templates::testing
