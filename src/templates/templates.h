// Template names → root filesystems for the runtime.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::templates {

struct TemplateInfo {
  std::string name;       // e.g. "host"
  std::string resolved;   // the template a name resolves to (base → host for now)
  std::string source;     // human text: "read-only views of the host's system directories"
};

class TemplateStore {
 public:
  // `runtime` tells which host ids sandbox root and `user` map to, so the
  // template's writable-at-first-use dirs (/, /home/user, /tmp) get owners the
  // sandbox can use. It must outlive the store.
  TemplateStore(std::filesystem::path data_dir, const runtime::Runtime& runtime);
  // Resolve a name or alias ("base", "host", "code-interpreter-v1") and make
  // sure its files exist, preparing them on first use.
  Result<runtime::RootfsSpec> rootfs(const std::string& name);
  // The canonical template id a name resolves to, or an error naming the known templates.
  Result<std::string> resolve(const std::string& name) const;
  std::vector<TemplateInfo> list() const;

 private:
  std::filesystem::path dir_;
  const runtime::Runtime& runtime_;
};

}  // namespace abx::templates
