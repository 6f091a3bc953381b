// Volumes (E2B's volume API): named, team-owned, persistent directories that
// sandboxes mount read-write at create, several at once. Each lives under
// <data>/volumes/<id>/: meta.json (name, team, token, created), image (an
// ext4 filesystem in a sparse file the size of the team's maxVolumeMB) and
// data/, where the daemon keeps the image loop-mounted while the volume
// exists and the daemon runs (runtime/loop_image.h). Sandboxes bind data/;
// the content API reads and writes through it. Its root is owned by the
// shared uid range, as template layers are (runtime/id_ranges.h), so every
// sandbox sees the same owners through its idmapped mount. Host paths are
// never chosen by a caller.
//
// The size quota is hard: past the image's size the kernel answers ENOSPC,
// to a sandbox as to the daemon. The daemon's own checks stay for a quota
// lowered since the image was made (an image grows, never shrinks): the
// content API refuses a write that would pass it, and a create refuses to
// mount a volume already past it.
//
// Where the daemon cannot attach loop devices (not root, no
// /dev/loop-control, no mkfs.ext4) volumes are plain directories, as are
// the volumes made before images: their quota is soft, so they mount only
// when config.json says "volumes": {"mounts": true}.
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
#include "common/unique_fd.h"
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
  bool image = false;  // an ext4 image (a hard size), not a plain directory
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

  // config.json's "volumes": {"mounts": ...}. Unset, creates mount image
  // volumes (their size is hard) and no plain directory (a sandbox's own
  // writes could fill the data dir's disk); true mounts both, false none.
  // The store and its API work either way.
  void allow_mounts(std::optional<bool> configured) { mounts_configured_ = configured; }
  // "image" where volumes are made as ext4 images, else "directory".
  std::string storage() const { return no_images_.empty() ? "image" : "directory"; }
  // Why volumes are plain directories here ("" when they are images).
  const std::string& no_images_reason() const { return no_images_; }
  // Whether a create may mount `volume`.
  bool mountable(const Volume& volume) const;

  // EEXIST: the team has a volume of that name. An image is `size_bytes`
  // large (0: the size of the data dir's filesystem). Blocks (mkfs).
  Result<Volume> create(const std::string& team, const std::string& name, uint64_t size_bytes);
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

  // The directory mounted into sandboxes. An image volume's is its image's
  // mount, remounted here if it went: ENODEV when it cannot be, never the
  // empty directory beneath (what is written there would escape the size).
  Result<std::filesystem::path> data_dir(const std::string& id) const;
  // data_dir opened (O_PATH): for an image volume, checked to be the image's
  // filesystem once open, so a remount meanwhile (a grow) cannot hand out
  // the directory beneath.
  Result<UniqueFd> open_root(const std::string& id) const;
  // An image volume grown to `size_bytes` if smaller (a raised quota; 0: none).
  Status fit(const std::string& id, uint64_t size_bytes) const;
  // Detaches every image's mount (the daemon stops; sandboxes keep theirs).
  void unmount_all() const;
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
  Status mount(const std::string& id) const;
  uint64_t image_size(uint64_t size_bytes) const;

  std::filesystem::path dir_;
  VolumeOwners owners_;
  mutable std::mutex mutex_;
  std::map<std::string, Volume> volumes_;  // by id
  std::map<std::string, int> holds_;
  std::optional<bool> mounts_configured_;
  std::string no_images_;        // runtime::loop_image::unavailable_reason()
  mutable std::mutex mounting_;  // one image is never attached twice at once
};

// config.json's "volumes": {"mounts": BOOL} (unset when absent).
Result<std::optional<bool>> load_volume_mounts(const std::filesystem::path& config_file);

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
