// Writes tar members below a RootedDir with *at() calls on the parent fd, so
// no member (a name, a symlink earlier in the tar, a hard link's target) can
// create, change or delete anything outside the dir. Used instead of
// libarchive's disk writer, which works on host paths.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "templates/rooted_dir.h"

namespace abx::templates {

// The step of a write() error that was reading the archive, not writing the dir.
inline constexpr const char* kMemberReadStep = "read archive";

struct IdShift {
  uid_t uid = 0;  // host uid of sandbox uid 0; added to every entry's uid
  gid_t gid = 0;
};

struct MemberOptions {
  // Owners are the members' ids shifted into the sandboxes' range (as root; else the
  // daemon's). Without it, files stay the daemon's and lose set-id bits unless kept below.
  bool owners = false;
  IdShift shift;
  bool keep_set_id = false;  // set-id bits even without owners (a private scratch dir)
  bool xattrs = false;       // user.* (not user.overlay.*) and security.capability
  // A file member may say it is larger than this (0: no bound); a sparse one costs the tar
  // next to nothing, yet whoever reads it back (hashing, copying) reads every byte.
  uint64_t max_file_bytes = 0;
};

class MemberWriter {
 public:
  MemberWriter(const RootedDir& root, MemberOptions options) : root_(root), options_(options) {}

  // Writes the member whose header `entry` was just read from `in`; `rel` is its
  // normalised name ("" for the dir itself) and `link` a hard link's normalised
  // target, or nullptr.
  // Device nodes and sockets are skipped: a template has no use for a host device.
  // The data read is added to `bytes`. Errors name the step, not the member.
  Status write(archive* in, archive_entry* entry, const std::string& rel, const char* link,
               uint64_t& bytes);
  // Dir modes, owners and times, set once nothing more is written into them.
  Status finish();

 private:
  struct DirFixup {
    std::string rel;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    timespec mtime;
    std::vector<std::pair<std::string, std::string>> xattrs;
  };

  Status check_size(archive_entry* entry) const;
  Status write_file(archive* in, archive_entry* entry, const ParentAndName& at, uint64_t& bytes);
  Status write_dir(archive_entry* entry, const std::string& rel);
  Status write_symlink(archive_entry* entry, const ParentAndName& at);
  Status write_hardlink(const std::string& target, const ParentAndName& at);
  Status write_fifo(archive_entry* entry, const ParentAndName& at);
  Status set_attributes(int fd, archive_entry* entry);
  Status set_name_attributes(const ParentAndName& at, archive_entry* entry);
  uid_t owner_uid(archive_entry* entry) const;
  gid_t owner_gid(archive_entry* entry) const;
  mode_t mode_of(archive_entry* entry) const;

  const RootedDir& root_;
  MemberOptions options_;
  std::vector<DirFixup> dirs_;
};

}  // namespace abx::templates
