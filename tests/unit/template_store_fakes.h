// What the template store's unit tests share: a runtime that makes no
// sandboxes (the store only asks for id mappings), tar archives
// (tar_fixture.h) and a file's bytes.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/runtime.h"
#include "tar_fixture.h"
#include "templates/templates.h"

namespace abx::testing {

namespace fs = std::filesystem;

// The store only asks a runtime for id mappings and to drain its pool.
class NoSandboxRuntime : public runtime::Runtime {
 public:
  Result<std::unique_ptr<runtime::Sandbox>> create(const runtime::SandboxSpec&) override {
    return Error{"create", ENOSYS, {}};
  }
  Result<std::unique_ptr<runtime::Sandbox>> adopt(const runtime::SandboxRecord&) override {
    return Error{"adopt", ENOSYS, {}};
  }
  Status destroy(const runtime::SandboxRecord&) override { return {}; }
  void sweep_orphans(const std::vector<std::string>&) override {}
  uid_t host_uid(uint32_t) const override { return ::geteuid(); }
  gid_t host_gid(uint32_t) const override { return ::getegid(); }
  std::vector<std::string> warnings() const override { return {}; }
};

// Builds `name` from `sandboxfile` with `context` (made here, empty) as its context.
inline Result<templates::TemplateInfo> build_sandboxfile(templates::TemplateStore& store,
                                                         const std::string& name,
                                                         const std::string& sandboxfile,
                                                         const fs::path& context) {
  templates::SandboxfileRequest request;
  request.name = name;
  request.context_dir = context;
  fs::create_directories(request.context_dir);
  request.sandboxfile = sandboxfile;
  return store.build_sandboxfile(request, [](const std::string&) {});
}

inline std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace abx::testing
