// Filesystem images mounted through loop devices: what makes a volume's
// size a hard limit. The kernel answers ENOSPC to a write past the image's
// size, whoever writes (a sandbox through its bind, or the daemon).
//
// A loop device is attached with LO_FLAGS_AUTOCLEAR, so it detaches itself
// when its filesystem's last mount goes (ours, or a sandbox's bind of it):
// nothing is left behind by a daemon that dies, once the mounts are gone.
// An image never gets two loop devices at once (two ext4 superblocks on one
// file would corrupt it): a device already attached to it is reused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>

#include "common/error.h"

namespace abx::runtime::loop_image {

// Whether this process may attach loop devices and make ext4 images: root,
// /dev/loop-control, and mkfs.ext4 (e2fsprogs). Empty when it may; otherwise
// why not, in a few words.
std::string unavailable_reason();

// Makes a sparse file of `bytes` at `image` (which must not exist) holding an
// empty ext4 filesystem whose root is owned by uid:gid, without the 5%
// reserved for root (a sandbox's root is not the host's) or lost+found.
Status make_ext4(const std::filesystem::path& image, uint64_t bytes, uid_t uid, gid_t gid);

// Whether `dir` is the root of a mount (another filesystem than its parent's).
bool is_mount_point(const std::filesystem::path& dir);

// Mounts `image`'s ext4 at `target` (an empty directory), nosuid and nodev.
// Nothing is done when `target` already is a mount point (a daemon that
// restarted finds its mounts in place).
Status mount(const std::filesystem::path& image, const std::filesystem::path& target);

// Detaches the mount at `target` (lazily: a sandbox's bind keeps the
// filesystem, and so the loop device, until it goes). No error when none.
Status unmount(const std::filesystem::path& target);

// Makes the filesystem mounted at `target`, from `image`, `bytes` large
// (grown, never shrunk: an ext4 filesystem shrinks only unmounted).
Status grow(const std::filesystem::path& image, const std::filesystem::path& target,
            uint64_t bytes);

}  // namespace abx::runtime::loop_image
