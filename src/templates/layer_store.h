// Template layers on disk: <templates>/.layers/<id>/ is one read-only overlay
// lower dir. Ids are content keys (a Sandboxfile step's hash, a Debian spec's
// hash), so two templates that share a prefix share its layers, and a step
// whose layer exists is not run again.
#pragma once

#include <filesystem>
#include <set>
#include <string>

#include "common/error.h"

namespace abx::templates {

namespace fs = std::filesystem;

class LayerStore {
 public:
  explicit LayerStore(fs::path templates_dir) : dir_(std::move(templates_dir) / ".layers") {}

  fs::path path(const std::string& id) const { return dir_ / id; }
  bool has(const std::string& id) const;

  // A fresh, empty staging dir for layer `id`; the caller fills it, then
  // commits it or lets the next daemon start sweep it away.
  Result<fs::path> begin(const std::string& id) const;
  // Moves `staged` (or a dir inside it) into place as layer `id`, replacing
  // an older layer of that id, and removes the staging dir.
  Status commit(const std::string& id, const fs::path& staged_root, const fs::path& staging) const;
  // Removes staging dirs of interrupted builds.
  void sweep_staging() const;
  // Removes every layer not in `referenced`.
  void collect_garbage(const std::set<std::string>& referenced) const;

 private:
  fs::path dir_;
};

}  // namespace abx::templates
