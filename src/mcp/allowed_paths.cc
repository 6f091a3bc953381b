#include "mcp/allowed_paths.h"

#include <algorithm>

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

}  // namespace

Result<std::vector<fs::path>> canonical_dirs(const std::vector<std::string>& dirs) {
  std::vector<fs::path> out;
  for (const auto& dir : dirs) {
    std::error_code ec;
    fs::path canonical = fs::canonical(dir, ec);
    if (ec || !fs::is_directory(canonical)) {
      return Error{"--allow-dir " + dir + ": not an existing directory"};
    }
    out.push_back(std::move(canonical));
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
