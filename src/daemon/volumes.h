// Volumes (E2B's volume API): named, team-owned, persistent directories that
// sandboxes mount read-write at create, several at once. Each lives under
// <data>/volumes/<id>/: meta.json (name, team, token, created) and data/, the
// directory mounted. data/ is owned by the shared uid range, as template
// layers are (runtime/id_ranges.h), so every sandbox sees the same owners
// through its idmapped mount. Host paths are never chosen by a caller.
//
// The size quota is the daemon's: the content API refuses a write that would
// pass it, and a sandbox create refuses to mount a volume already past it;
// writes from inside a sandbox are not stopped by the kernel at the quota.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/control_requests.h"
#include "daemon/sandbox_row.h"
#include "runtime/runtime.h"

namespace abx::daemon {

struct Volume {
  std::string id;  // UUID-shaped, what /volumes/{volumeID} takes
  std::string name;
  std::string team;
  std::string token;  // the content API's bearer token
  int64_t created_ms = 0;
};

// Sandbox ids to host ids of the shared range (Runtime::host_uid/host_gid).
struct VolumeOwners {
  std::function<uid_t(uint32_t)> host_uid;
  std::function<gid_t(uint32_t)> host_gid;
};

// A name must be 1 to 63 of [A-Za-z0-9._-], not starting with '.' or '-'.
Status check_volume_name(const std::string& name);
bool is_volume_id(const std::string& id);

class Volumes {
 public:
  // Loads the volumes of `dir` (made if missing).
  static Result<std::unique_ptr<Volumes>> open(std::filesystem::path dir, VolumeOwners owners);

  // Whether creates may mount volumes (config.json's "volumes": {"mounts": true}):
  // off by default, since a volume's size quota is checked only at mount time
  // and on writes through the API, so a sandbox's own writes could fill the
  // data dir's disk. The store and its API work either way.
  void allow_mounts(bool allowed) { mounts_allowed_ = allowed; }

  // EEXIST: the team has a volume of that name.
  Result<Volume> create(const std::string& team, const std::string& name);
  std::vector<Volume> list(const std::string& team) const;
  // The team's volume: another team's is not found, as one that never was.
  std::optional<Volume> find(const std::string& team, const std::string& id) const;
  std::optional<Volume> find_by_name(const std::string& team, const std::string& name) const;
  // Anyone's volume (the content API, which checks the token itself).
  std::optional<Volume> find_any(const std::string& id) const;
  // Removes the volume and its files. EBUSY while `in_use` says a sandbox
  // mounts it or a create is mounting it. Blocks (removes the tree).
  Result<bool> remove(const std::string& team, const std::string& id,
                      const std::function<bool(const std::string& id)>& in_use);

  // The directory mounted into sandboxes.
  std::filesystem::path data_dir(const std::string& id) const;
  // Bytes its files hold (a walk; blocks).
  uint64_t usage_bytes(const std::string& id) const;
  const VolumeOwners& owners() const { return owners_; }

  // A create's mounts, by the team's volume names: ENOENT for a name the
  // team has none of; kErrQuota for a volume already past `quota_bytes`
  // (0: none). Blocks (measures each volume).
  Result<std::vector<VolumeMountRow>> resolve(const std::string& team,
                                              const std::vector<VolumeMountRequest>& mounts,
                                              uint64_t quota_bytes) const;
  // What the runtime binds for them (ENOENT: a volume is gone).
  Result<std::vector<runtime::BindMount>> binds_of(const std::vector<VolumeMountRow>& rows) const;

  // A create holds the volumes it mounts from before the runtime makes the
  // sandbox until its row is stored, so a delete meanwhile is refused.
  void hold(const std::string& id);
  void release(const std::string& id);
  bool held(const std::string& id) const;

 private:
  Volumes(std::filesystem::path dir, VolumeOwners owners);
  Status load();

  std::filesystem::path dir_;
  VolumeOwners owners_;
  mutable std::mutex mutex_;
  std::map<std::string, Volume> volumes_;  // by id
  std::map<std::string, int> holds_;
  bool mounts_allowed_ = false;
};

// config.json's "volumes": {"mounts": BOOL} (false when absent).
Result<bool> load_volume_mounts_allowed(const std::filesystem::path& config_file);

// Holds volumes for the length of a create (Volumes::hold).
class VolumeHolds {
 public:
  explicit VolumeHolds(Volumes& volumes) : volumes_(volumes) {}
  ~VolumeHolds() {
    for (const auto& id : ids_) volumes_.release(id);
  }
  VolumeHolds(const VolumeHolds&) = delete;
  VolumeHolds& operator=(const VolumeHolds&) = delete;
  void add(const std::string& id) {
    volumes_.hold(id);
    ids_.push_back(id);
  }

 private:
  Volumes& volumes_;
  std::vector<std::string> ids_;
};

}  // namespace abx::daemon
