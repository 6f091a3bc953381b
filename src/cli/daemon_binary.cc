#include "cli/daemon_binary.h"

#include <unistd.h>

#include <cerrno>

namespace abx::cli {
namespace fs = std::filesystem;

Result<fs::path> daemon_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Error{"find the abx binary", ec.value(), "/proc/self/exe"};
  fs::path binary = self.parent_path() / "abx-daemon";
  if (::access(binary.c_str(), X_OK) != 0) {
    return Error::with_message(binary.string() +
                               " is missing: abx runs the daemon from abx-daemon beside it; build "
                               "it (`ninja -C build abx-daemon`) or reinstall abx");
  }
  return binary;
}

Error exec_daemon(const fs::path& binary, const std::vector<std::string>& args) {
  // argv[1] is "serve", as it was when abx itself was the daemon: ps shows it so.
  std::vector<const char*> argv = {"abx-daemon", "serve"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  ::execv(binary.c_str(), const_cast<char* const*>(argv.data()));
  return Error::from_errno("run the daemon", binary.string());
}

}  // namespace abx::cli
