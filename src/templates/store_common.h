// What the two halves of the template store (lookup in template_store.cc,
// builds in template_builds.cc) share: name rules, the build lock that
// serialises builds between threads and processes, and the build log.
#pragma once

#include <fcntl.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.h"
#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "templates/templates.h"

namespace abx::templates::store {

namespace fs = std::filesystem;

inline constexpr const char* kHost = "host";
inline constexpr const char* kBase = "base";
inline constexpr const char* kCodeInterpreter = "code-interpreter-v1";
// Owns the stored templates made before templates recorded an owner.
inline constexpr const char* kUnownedTeam = "default";
inline constexpr const char* kBuildingPrefix = ".building-";

// A name users give a template: [a-z0-9._-], starting with a letter or digit.
bool valid_name(const std::string& name);
// A stored template's id: a valid name, or `name@team` (TemplateStore::id_for).
bool valid_id(const std::string& id);
// What a build under a name that cannot be one is refused with.
Error unbuildable_name(const std::string& name);
// unbuildable_name's error, unless `id` can name a built template.
Status check_buildable_name(const std::string& id);

Result<UniqueFd> lock_builds(const fs::path& templates_dir, bool wait);
Status ensure_templates_dir(const fs::path& dir);

// Holds both locks (threads, then processes) for one build or removal.
struct BuildLock {
  std::unique_lock<std::mutex> threads;
  UniqueFd file;
};
Result<std::unique_ptr<BuildLock>> take_build_lock(const fs::path& templates_dir);
// The same locks, or nothing when a build or removal holds them now: for work
// that may wait for a later turn instead of waiting for a build to end.
std::unique_ptr<BuildLock> try_build_lock(const fs::path& templates_dir);

// A build's log file and its client's progress: steps go to both, details
// (every line mmdebstrap prints) only to the file.
class BuildLog {
 public:
  BuildLog(const fs::path& path, BuildProgressFn progress)
      : out_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)),
        progress_(std::move(progress)) {}
  void step(const std::string& line) {
    detail(line);
    progress_(line);
  }
  // The log is for people reading it later; a failed write must not fail the build.
  void detail(const std::string& line) {
    if (out_.valid()) (void)write_all(out_.get(), line + "\n");
  }
  // Logs why the build failed and hands the error back.
  Error failed(const Error& error) {
    detail("failed: " + error.message());
    return error;
  }
  BuildProgressFn steps() {
    return [this](const std::string& line) { step(line); };
  }
  BuildProgressFn details() {
    return [this](const std::string& line) { detail(line); };
  }

 private:
  UniqueFd out_;
  BuildProgressFn progress_;
};

// What an unknown name gets from resolve(); `known` lists the names to try.
Error unknown_template(const std::string& name, const std::string& known);

// "313 MiB", rounded to the nearest MiB.
std::string mib_text(uint64_t bytes);

}  // namespace abx::templates::store
