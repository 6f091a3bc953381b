#include "runtime/id_ranges.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>

#include <string>
#include <utility>

namespace abx::runtime {
namespace {

// Held for the daemon's life; the kernel drops it when the daemon dies.
Result<UniqueFd> lock_region(uint32_t region, const std::filesystem::path& lock_dir) {
  std::error_code ec;
  std::filesystem::create_directories(lock_dir, ec);
  if (ec) return Error{"create uid range lock dir", ec.value(), lock_dir.string()};
  const auto path = lock_dir / ("uid-region-" + std::to_string(region) + ".lock");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::from_errno("open uid range lock", path.string());
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return Error{"claim uid ranges", errno == EWOULDBLOCK ? EBUSY : errno,
                 "region " + std::to_string(region) + " is held by another abx daemon"};
  return fd;
}

uid_t first_id(uint32_t region, uint32_t slot) {
  return static_cast<uid_t>(IdRanges::kFirstId +
                            (uint64_t{region} * IdRanges::kSlots + slot) * IdRanges::kIdsPerSlot);
}

}  // namespace

IdRanges::IdRanges(const user::IdMap& stored, uint32_t region, UniqueFd lock)
    : stored_(stored),
      region_(region),
      lock_(std::move(lock)),
      used_(kSlots, false),
      translations_(kSlots) {
  used_[0] = true;
}

Result<std::unique_ptr<IdRanges>> IdRanges::claim(const user::IdMap& stored, int previous,
                                                  const std::filesystem::path& lock_dir) {
  if (stored.count != kIdsPerSlot)
    return Error{"claim uid ranges", EINVAL, "the shared range does not map 65536 ids"};
  auto make = [&](uint32_t region, UniqueFd lock) {
    return std::unique_ptr<IdRanges>(new IdRanges(stored, region, std::move(lock)));
  };
  if (previous >= 0 && static_cast<uint32_t>(previous) < kRegions)
    if (auto lock = lock_region(static_cast<uint32_t>(previous), lock_dir))
      return make(static_cast<uint32_t>(previous), std::move(*lock));
  for (uint32_t region = 0; region < kRegions; ++region)
    if (auto lock = lock_region(region, lock_dir)) return make(region, std::move(*lock));
  return Error{"claim uid ranges", EBUSY,
               "all " + std::to_string(kRegions) + " uid regions are held by other abx daemons"};
}

user::IdMap IdRanges::map_of(uint32_t slot) const {
  const uid_t zero = first_id(region_, slot);
  return user::IdMap{zero, zero + 1, zero, zero + 1, kIdsPerSlot, false};
}

uint32_t IdRanges::slot_of(uid_t uid_zero) const {
  const uint64_t first = first_id(region_, 0);
  if (uid_zero < first || (uid_zero - first) % kIdsPerSlot != 0) return 0;
  const uint64_t slot = (uid_zero - first) / kIdsPerSlot;
  return slot < kSlots ? static_cast<uint32_t>(slot) : 0;
}

uint32_t IdRanges::take() {
  std::lock_guard lock(mutex_);
  for (uint32_t tried = 0; tried < kSlots; ++tried) {
    const uint32_t slot = next_;
    next_ = next_ + 1 < kSlots ? next_ + 1 : 1;
    if (!used_[slot]) {
      used_[slot] = true;
      return slot;
    }
  }
  return 0;
}

bool IdRanges::hold(uint32_t slot) {
  std::lock_guard lock(mutex_);
  if (slot == 0 || slot >= kSlots || used_[slot]) return false;
  used_[slot] = true;
  return true;
}

// Its translation goes too: kept for every slot ever used, a daemon held one
// more descriptor per range taken (next-fit takes a new one each create).
void IdRanges::give_back(uint32_t slot) {
  std::lock_guard lock(mutex_);
  if (slot == 0 || slot >= kSlots) return;
  used_[slot] = false;
  translations_[slot].reset();
}

Result<int> IdRanges::translation(uint32_t slot) {
  if (slot == 0 || slot >= kSlots) return Error{"uid range", EINVAL, "no such slot"};
  std::lock_guard lock(mutex_);
  if (!translations_[slot].valid()) {
    auto ns = user::translating_namespace(stored_, map_of(slot));
    if (!ns) return ns.error();
    translations_[slot] = std::move(*ns);
  }
  return translations_[slot].get();
}

Status IdRanges::probe(const std::filesystem::path& dir) {
  auto ns = translation(kSlots - 1);
  if (!ns) return ns.error();
  auto tree = idmapped_tree(dir.string(), *ns, false);
  if (!tree) return tree.error();
  return {};
}

Result<UniqueFd> idmapped_tree(const std::string& path, int translation, bool writable,
                               uint64_t extra_attrs) {
  UniqueFd tree(::open_tree(AT_FDCWD, path.c_str(),
                            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW));
  if (!tree.valid()) return Error::from_errno("clone mount", path);
  mount_attr attr{};
  attr.attr_set =
      (writable ? MOUNT_ATTR_IDMAP : MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY) | extra_attrs;
  attr.userns_fd = static_cast<unsigned>(translation);  // an fd: never negative here
  if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
    return Error::from_errno("idmap mount", path);
  return tree;
}

}  // namespace abx::runtime
