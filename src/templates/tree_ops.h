// Small filesystem steps used to assemble a template tree, each returning an
// Error that names the step and the path.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>

#include "common/error.h"

namespace abx::templates::tree {

namespace fs = std::filesystem;

Status make_dir(const fs::path& path, mode_t mode);
Status write_text(const fs::path& path, const std::string& text, mode_t mode = 0644);
Status make_symlink(const std::string& target, const fs::path& link);

// Copies regular files, symlinks (verbatim) and directories from `from` to
// `to`; anything else is skipped, as is every entry `skip` accepts.
using SkipFn = std::function<bool(const fs::path& host_path)>;
Status copy(const fs::path& from, const fs::path& to, const SkipFn& skip);

// lchown of `path` and, if it is a directory, everything below it. As a
// non-root user (tests, rootless) ownership cannot change and is left alone.
Status chown_tree(const fs::path& path, uid_t uid, gid_t gid);

// Removes `path` and everything below it; absent is fine.
Status remove_tree(const fs::path& path);

}  // namespace abx::templates::tree
