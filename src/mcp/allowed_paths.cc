#include "mcp/allowed_paths.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace abx::mcp {
namespace fs = std::filesystem;
namespace {

bool is_under(const fs::path& path, const fs::path& dir) {
  auto [dir_end, unused] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return dir_end == dir.end();
}

std::string list_of(const std::vector<fs::path>& dirs) {
  std::string out;
  for (const auto& dir : dirs) out += (out.empty() ? "" : ", ") + dir.string();
  return out;
}

// "--allow-dir ~/ (that is /home/me)": what the user typed, and what it came to.
std::string named(const std::string& dir, const fs::path& canonical) {
  const std::string shown = "--allow-dir " + dir;
  return canonical.string() == dir ? shown : shown + " (that is " + canonical.string() + ")";
}

Result<fs::path> checked_allow_dir(const std::string& dir, const std::vector<fs::path>& homes) {
  std::error_code ec;
  fs::path canonical = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(canonical)) {
    return Error::with_message("--allow-dir " + dir + ": not an existing directory");
  }
  if (canonical == canonical.root_path()) {
    return Error::with_message(named(dir, canonical) +
                               " would let the agent read and write every file of the host; "
                               "pass the project directory instead, e.g. --allow-dir "
                               "/path/to/project");
  }
  for (const auto& home : homes) {
    if (!is_under(home, canonical)) continue;
    const bool is_home = canonical == home;
    const std::string what =
        is_home ? " is your home directory" : " holds your home directory " + home.string();
    return Error::with_message(named(dir, canonical) + what +
                               " (~/.ssh and other credentials are there); pass a project "
                               "directory instead, e.g. --allow-dir " +
                               (home / "myproject").string());
  }
  return canonical;
}

// `path` made absolute, its symlinks and `..` resolved as far as it exists,
// without a trailing slash.
fs::path resolved_dir(const std::string& path) {
  std::error_code ec;
  fs::path out = fs::weakly_canonical(fs::absolute(path, ec), ec).lexically_normal();
  if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
  return out;
}

}  // namespace

std::vector<fs::path> user_homes() {
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("HOME"); home && *home) candidates.emplace_back(home);
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_dir && *found->pw_dir) {
    candidates.emplace_back(found->pw_dir);
  }
  std::vector<fs::path> homes;
  for (const auto& candidate : candidates) {
    fs::path home = resolved_dir(candidate);
    if (std::find(homes.begin(), homes.end(), home) == homes.end()) homes.push_back(home);
  }
  return homes;
}

Result<std::vector<fs::path>> checked_allow_dirs(const std::vector<std::string>& dirs,
                                                 const std::vector<fs::path>& homes) {
  std::vector<fs::path> out;
  for (const auto& dir : dirs) {
    auto checked = checked_allow_dir(dir, homes);
    if (!checked) return checked.error();
    out.push_back(std::move(*checked));
  }
  return out;
}

Result<fs::path> allowed_host_path(const std::string& host_path,
                                   const std::vector<fs::path>& allowed) {
  std::error_code ec;
  // weakly_canonical resolves every symlink of the part that exists, so a
  // link inside an allowed dir pointing out of it is judged by its target.
  fs::path resolved = fs::weakly_canonical(fs::absolute(host_path, ec), ec);
  if (ec) return Error{"cannot resolve host path " + host_path, ec.value()};
  for (const auto& dir : allowed) {
    if (is_under(resolved, dir)) return resolved;
  }
  return Error{"host path " + host_path + " (" + resolved.string() +
               ") is outside the directories this MCP server may touch (" + list_of(allowed) +
               "); use a path under one of them, or ask the user to restart `abx mcp serve` "
               "with --allow-dir"};
}

}  // namespace abx::mcp
