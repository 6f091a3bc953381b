// Template names → root filesystems for the runtime; building, listing and
// removing stored templates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::templates {

struct TemplateInfo {
  std::string name;      // e.g. "host"
  std::string resolved;  // the template a name resolves to (an alias names its target)
  std::string source;    // human text: "read-only views of the host's system directories"
  bool built = true;     // false: built from its spec on first use (or `abx template build`)
  uint64_t size_bytes = 0;
  int64_t created_ms = 0;                  // unix ms; 0 when unknown
  std::map<std::string, std::string> env;  // defaults for processes (from an image's config)
  std::string workdir;
  std::string user;
};

// Progress lines of a build ("step: ...", "packages: ...", "extracted: ...").
using BuildProgressFn = std::function<void(const std::string& line)>;

struct BuildOptions {
  bool no_cache = false;  // rebuild the rootfs even if the cache holds this spec
};

class TemplateStore {
 public:
  // `runtime` tells which host ids sandbox root and `user` map to, so template
  // files get owners the sandbox can use. It must outlive the store. Removes
  // what an interrupted build left behind.
  TemplateStore(std::filesystem::path data_dir, const runtime::Runtime& runtime);
  // Resolve a name or alias ("base", "host", "code-interpreter-v1") and make
  // sure its files exist, building them on first use.
  Result<runtime::RootfsSpec> rootfs(const std::string& name);
  // The canonical template id a name resolves to, or an error naming the known templates.
  Result<std::string> resolve(const std::string& name) const;
  std::vector<TemplateInfo> list() const;
  Result<TemplateInfo> inspect(const std::string& name) const;

  // Builds `name` from its spec (templates/<name>/spec.toml). A build already
  // running for any template is waited for first; the template is listed only
  // once it is complete. The log is kept at log_path(name).
  Result<TemplateInfo> build(const std::string& name, const BuildOptions& options,
                             const BuildProgressFn& progress);
  // Removes a stored template (the caller checks that no sandbox uses it).
  Status remove(const std::string& name);
  std::filesystem::path log_path(const std::string& name) const;

 private:
  std::filesystem::path dir_;
  const runtime::Runtime& runtime_;
};

}  // namespace abx::templates
