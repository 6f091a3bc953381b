// Snapshots of sandboxes' filesystems: a record per snapshot in the state
// store, and its layers under <data>/snapshots/<layer id>/, each a copy of
// one sandbox's writable layer made by runtime/layer_copy. A sandbox made
// from a snapshot mounts the snapshot's layers (topmost first) over its
// template's, read-only, with a fresh writable layer of its own; a snapshot
// of that sandbox records its own new layer over the same chain. A layer is
// removed once no snapshot and no sandbox (live or filesystem-paused) names
// it. Filesystem only: processes and memory are not part of a snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "daemon/store.h"

namespace abx::daemon {

namespace fs = std::filesystem;

// What a sandbox's root is made of, below its own writable layer: enough to
// start a sandbox on it again without asking the template store.
struct RootSource {
  std::string template_id;
  std::string alias;
  std::vector<std::string> template_layers;  // host paths, topmost first
  std::vector<std::pair<std::string, std::string>> template_binds;
  bool allow_setid = false;
  std::vector<std::string> snapshot_layers;  // layer ids, topmost first
  std::map<std::string, std::string> template_env;
  std::string default_user;  // "" = `user`
  uint32_t default_uid = 1000;
  uint32_t default_gid = 1000;
  std::string default_home;
  std::string default_cwd;
};

struct Snapshot {
  std::string id;  // "snap" + hex; what Sandbox.create(id) takes as its template
  std::string name;
  std::string owner;
  std::string sandbox_id;  // the sandbox it was taken of
  int64_t created_ms = 0;
  uint64_t size_bytes = 0;  // of its own layer (the topmost of root.snapshot_layers)
  RootSource root;
};

// Layers a snapshot may stack at most (each a generation of snapshot of a
// snapshot, or of a filesystem-only pause); the runtime takes 127 in all.
inline constexpr size_t kMaxSnapshotLayers = 64;

class SnapshotStore {
 public:
  // Loads the records; removes staging dirs an interrupted copy left.
  SnapshotStore(fs::path dir, Store& store);

  static bool is_snapshot_id(const std::string& id);
  static std::string new_snapshot_id();

  fs::path layer_path(const std::string& layer) const { return dir_ / layer; }

  // A fresh private dir to copy a layer into, and its layer id; commit()
  // moves it into place (kept from garbage collection until settle(), by
  // which time a snapshot or a sandbox row names it), discard() removes it.
  struct Staged {
    std::string layer;
    fs::path path;
  };
  Result<Staged> stage();
  Status commit(const Staged& staged);
  void discard(const Staged& staged);
  void settle(const std::string& layer);

  Status put(const Snapshot& snapshot);
  // The snapshot `id` if `team` owns it; nothing otherwise (another team's
  // is not revealed).
  std::optional<Snapshot> find_for(const std::string& team, const std::string& id) const;
  std::vector<Snapshot> list_for(const std::string& team) const;
  std::vector<Snapshot> all() const;
  // False when `team` owns no snapshot `id`.
  Result<bool> remove_for(const std::string& team, const std::string& id);

  // Removes every layer dir that neither a snapshot nor `in_use` names. Blocks.
  void collect_garbage(const std::set<std::string>& in_use);
  // Bytes of the layers `team`'s snapshots hold, and how many it has.
  std::pair<size_t, uint64_t> usage_of(const std::string& team) const;

 private:
  fs::path dir_;
  Store& store_;
  mutable std::mutex mutex_;
  std::map<std::string, Snapshot> snapshots_;
  std::multiset<std::string> pending_;  // committed layers not yet named by a record
};

}  // namespace abx::daemon
