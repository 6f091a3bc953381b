// What the two halves of the template store (lookup in template_store.cc,
// builds in template_builds.cc) share: name rules, the build lock that
// serialises builds between threads and processes, and the build log.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.h"
#include "common/unique_fd.h"
#include "templates/templates.h"

namespace abx::templates::store {

namespace fs = std::filesystem;

inline constexpr const char* kHost = "host";
inline constexpr const char* kBuildingPrefix = ".building-";

bool valid_name(const std::string& name);
// An error that says what a name may be, unless `name` can name a built template.
Status check_buildable_name(const std::string& name);

Result<UniqueFd> lock_builds(const fs::path& templates_dir, bool wait);
Status ensure_templates_dir(const fs::path& dir);

// Holds both locks (threads, then processes) for one build or removal.
struct BuildLock {
  std::unique_lock<std::mutex> threads;
  UniqueFd file;
};
Result<std::unique_ptr<BuildLock>> take_build_lock(const fs::path& templates_dir);

class LogFile {
 public:
  explicit LogFile(const fs::path& path) : out_(path, std::ios::trunc) {}
  void line(const std::string& text) { out_ << text << '\n' << std::flush; }

 private:
  std::ofstream out_;
};

// "313 MiB", rounded to the nearest MiB.
std::string mib_text(uint64_t bytes);

}  // namespace abx::templates::store

namespace abx::templates {

// A template ready to be published: its meta, with the layers it names
// already committed to the layer store.
struct TemplateStore::Staged {
  TemplateMeta meta;
};

}  // namespace abx::templates
