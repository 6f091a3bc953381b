// One host uid/gid range per sandbox (issue 31, defence in depth): what one
// sandbox's ids can reach on the host, no other sandbox's can. Every daemon
// holds a region of ranges by an exclusive lock, so sandboxes of two daemons
// never share one either. Layers stay stored once, owned by the daemon's
// shared range (user::choose), which no sandbox runs as: each sandbox sees
// them through idmapped mounts that translate that range into its own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/user.h"

namespace abx::runtime {

class IdRanges {
 public:
  static constexpr uint32_t kSlots = 4096;  // ranges per daemon; slot 0 unused
  static constexpr uint32_t kRegions = 7;   // daemons per host with their own ranges
  // Above the ids of host users, systemd's dynamic users and the common
  // /etc/subuid ranges: region r, slot s starts at kFirstId + (r*kSlots + s) * 65536.
  static constexpr uint64_t kFirstId = 1ull << 31;
  static constexpr uint32_t kIdsPerSlot = 65536;

  // Claims a region no other daemon holds (`previous`, this state dir's
  // region before, first: its sandboxes still running are adopted there).
  // `stored` is the map layers are stored with.
  static Result<std::unique_ptr<IdRanges>> claim(const user::IdMap& stored, int previous,
                                                 const std::filesystem::path& lock_dir);

  uint32_t region() const { return region_; }
  user::IdMap map_of(uint32_t slot) const;
  // The slot whose range starts at `uid_zero`, or 0 when it is not ours.
  uint32_t slot_of(uid_t uid_zero) const;

  // A free slot, marked used (the one after the last taken, so a range
  // freed goes back into use as late as possible); 0 when all are taken.
  uint32_t take();
  // Marks an adopted sandbox's slot used; false if it was not free.
  bool hold(uint32_t slot);
  void give_back(uint32_t slot);

  // The user namespace that translates the stored ids into `slot`'s, made
  // on first use (a short fork) and kept until the slot is given back.
  Result<int> translation(uint32_t slot);

  // EINVAL/EPERM/ENOSYS when idmapped mounts of `dir`'s filesystem cannot be
  // made here (kernel, filesystem): sandboxes must then share one range.
  Status probe(const std::filesystem::path& dir);

 private:
  IdRanges(const user::IdMap& stored, uint32_t region, UniqueFd lock);

  user::IdMap stored_;
  uint32_t region_;
  UniqueFd lock_;
  std::mutex mutex_;
  std::vector<bool> used_;
  std::vector<UniqueFd> translations_;
  uint32_t next_ = 1;
};

// An idmapped clone of the tree at `path` (a detached mount, its fd), shown
// through the user namespace `translation`; read-only unless `writable`.
// `extra_attrs` (MOUNT_ATTR_*) are set on it too (a volume's nosuid, nodev).
Result<UniqueFd> idmapped_tree(const std::string& path, int translation, bool writable,
                               uint64_t extra_attrs = 0);

}  // namespace abx::runtime
