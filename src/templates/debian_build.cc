#include "templates/debian_build.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>

#include "common/unique_fd.h"
#include "templates/child_process.h"

namespace abx::templates {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::vector<std::string> mmdebstrap_argv(const DebianSpec& spec, const fs::path& out) {
  std::vector<std::string> argv = {"mmdebstrap", "--verbose", "--mode=auto",
                                   "--variant=" + spec.variant, "--format=tar"};
  if (!spec.packages.empty()) argv.push_back("--include=" + join(spec.packages));
  for (const auto& hook : spec.customize_hooks) argv.push_back("--customize-hook=" + hook.string());
  argv.push_back(spec.suite);
  argv.push_back(out.string());
  if (!spec.mirror.empty()) argv.push_back(spec.mirror);
  return argv;
}

// Turns mmdebstrap's verbose output into a few progress lines: its steps
// ("I: ...") and a running count of downloaded and installed packages.
class ProgressFilter {
 public:
  explicit ProgressFilter(const ProgressFn& progress) : progress_(progress) {}
  void operator()(const std::string& line) {
    if (line.starts_with("I: ")) {
      progress_("step: " + line.substr(3));
    } else if (line.starts_with("Get:")) {
      if (++downloaded_ % 25 == 0)
        progress_("packages: " + std::to_string(downloaded_) + " downloaded");
    } else if (line.starts_with("Setting up ")) {
      if (++installed_ % 25 == 0) progress_("packages: " + std::to_string(installed_) + " set up");
    }
  }

 private:
  const ProgressFn& progress_;
  int downloaded_ = 0;
  int installed_ = 0;
};

Result<UniqueFd> lock_file(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid() || ::flock(fd.get(), LOCK_EX) != 0)
    return Error::from_errno("cache lock", path.string());
  return fd;
}

std::string failure_text(const ChildResult& result) {
  std::string text = "mmdebstrap exited with " + std::to_string(result.exit_code);
  for (const auto& line : result.tail) text += "\n  " + line;
  return text;
}

}  // namespace

fs::path cache_dir() {
  if (const char* dir = std::getenv("ABX_CACHE_DIR"); dir && *dir)
    return fs::path(dir) / "templates";
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir)
    return fs::path(dir) / "abx/templates";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/root") / ".cache/abx/templates";
}

Result<fs::path> debian_rootfs_tar(const DebianSpec& spec, bool no_cache, const ProgressFn& log,
                                   const ProgressFn& progress) {
  const fs::path dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"mkdir", ec.value(), dir.string()};
  const fs::path tar = dir / (spec.name + "-" + spec.hash + ".tar");
  // Daemons sharing the cache wait for one another instead of building twice.
  auto lock = lock_file(dir / (spec.name + ".lock"));
  if (!lock) return lock.error();
  if (!no_cache && fs::exists(tar, ec)) {
    progress("step: using cached " + tar.string());
    return tar;
  }
  const fs::path partial = dir / (spec.name + "-" + spec.hash + ".tar.partial");
  fs::remove(partial, ec);
  ProgressFilter filter(progress);
  auto ran = run_child(mmdebstrap_argv(spec, partial), [&](const std::string& line) {
    log(line);
    filter(line);
  });
  if (!ran) return ran.error();
  if (ran->exit_code != 0) {
    fs::remove(partial, ec);
    const bool full = std::any_of(ran->tail.begin(), ran->tail.end(), [](const std::string& line) {
      return line.find("No space left on device") != std::string::npos;
    });
    return Error{"mmdebstrap", full ? ENOSPC : EIO, failure_text(*ran)};
  }
  fs::rename(partial, tar, ec);
  if (ec) return Error{"rename", ec.value(), tar.string()};
  return tar;
}

}  // namespace abx::templates
