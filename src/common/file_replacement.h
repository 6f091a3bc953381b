// Files that appear under their name only when whole: the bytes go to a temp
// file in the same directory (so the rename is atomic) that is renamed over
// the destination on commit, and removed when anything fails first. Used by
// downloads (CLI and MCP) and every config file this project rewrites.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx {

namespace fs = std::filesystem;

class FileReplacement {
 public:
  // Creates the temp file beside `dest` with `mode` less the umask (exclusively and without
  // following links, so nothing placed at the temp name is written through).
  static Result<FileReplacement> create(const fs::path& dest, mode_t mode = 0644);

  FileReplacement(FileReplacement&& other) noexcept;
  FileReplacement& operator=(FileReplacement&&) = delete;
  FileReplacement(const FileReplacement&) = delete;
  FileReplacement& operator=(const FileReplacement&) = delete;
  ~FileReplacement();  // removes the temp file unless committed

  Status write(std::string_view data);
  // Renames the temp file over the destination; `sync` flushes it to disk first.
  Status commit(bool sync = false);
  const fs::path& temp_path() const { return temp_; }

 private:
  FileReplacement(fs::path dest, fs::path temp, UniqueFd fd);

  fs::path dest_, temp_;
  UniqueFd fd_;
  bool pending_ = true;  // the temp file exists and was not renamed
};

// Replaces `dest` with `text` at once.
Status replace_file(const fs::path& dest, std::string_view text, mode_t mode = 0644,
                    bool sync = false);

// The next piece of a download; "" when nothing came this time. `done` says when it ended.
struct PieceSource {
  std::function<Result<std::string>()> next;
  std::function<bool()> done;
};

// Saves every piece of `source` as `dest`, returning the bytes saved; on any failure `dest` is
// left as it was.
Result<uint64_t> download_to_file(const PieceSource& source, const fs::path& dest,
                                  mode_t mode = 0644);

}  // namespace abx
