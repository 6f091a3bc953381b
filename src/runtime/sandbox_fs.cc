// Each operation asks the sandbox's init for a worker first (file_op) and
// falls back to the host (fs_ops against the sandbox's root fd, with the
// user's filesystem ids on this thread) only when that init predates them.
#include "runtime/sandbox_fs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "agent/protocol.h"
#include "common/fd_io.h"
#include "runtime/file_client.h"
#include "runtime/fs_ops.h"

namespace abx::runtime::sandbox_fs {
namespace {

// How long a write waits for the sandbox to take data before giving up.
constexpr int kStalledWriteMs = 30'000;

// Sandbox root may override file permissions inside its sandbox; so may the
// daemon acting for it. Changing the fsuid away from 0 drops these
// capabilities; they stay permitted and are raised again here (this thread only).
void raise_file_capabilities() {
  static constexpr cap_value_t kFileCaps[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
                                              CAP_FOWNER, CAP_FSETID};
  cap_t caps = ::cap_get_proc();
  if (caps == nullptr) return;
  ::cap_set_flag(caps, CAP_EFFECTIVE, std::size(kFileCaps), kFileCaps, CAP_SET);
  (void)::cap_set_proc(caps);  // unprivileged there is nothing to raise
  ::cap_free(caps);
}

// Served from the host: acts on the sandbox's files with the filesystem ids
// of a sandbox user, on this thread only (setfsuid is per thread). A
// sandbox's overlay and tmpfs belong to its user namespace, where the
// daemon's root has no mapping: creating or renaming as host root fails
// there with EOVERFLOW. Unprivileged (tests, rootless) the ids cannot change
// and files stay the daemon's.
class ActingAs {
 public:
  ActingAs(const Sandbox& sb, uint32_t sandbox_uid)
      : groups_(sb.host_gid(sandbox_uid)),
        old_gid_(static_cast<gid_t>(::setfsgid(sb.host_gid(sandbox_uid)))),
        old_uid_(static_cast<uid_t>(::setfsuid(sb.host_uid(sandbox_uid)))) {
    if (sandbox_uid == 0) raise_file_capabilities();
  }
  ~ActingAs() {
    ::setfsuid(old_uid_);  // back to 0 also restores the file capabilities
    ::setfsgid(old_gid_);
  }
  ActingAs(const ActingAs&) = delete;
  ActingAs& operator=(const ActingAs&) = delete;

 private:
  // The daemon's own supplementary groups (host root's, often gid 0) must not
  // lend their access. glibc's setgroups() changes every thread of the
  // process; the raw syscall changes this thread only.
  class ThreadGroups {
   public:
    explicit ThreadGroups(gid_t only) {
      const long count = ::syscall(SYS_getgroups, 0, nullptr);
      saved_.resize(count > 0 ? static_cast<size_t>(count) : 0);
      if (count < 0 || ::syscall(SYS_getgroups, count, saved_.data()) != count) return;
      switched_ = ::syscall(SYS_setgroups, 1, &only) == 0;  // unprivileged: stays as is
    }
    ~ThreadGroups() {
      if (switched_) (void)::syscall(SYS_setgroups, saved_.size(), saved_.data());
    }
    ThreadGroups(const ThreadGroups&) = delete;
    ThreadGroups& operator=(const ThreadGroups&) = delete;

   private:
    std::vector<gid_t> saved_;
    bool switched_ = false;
  };

  ThreadGroups groups_;
  gid_t old_gid_;
  uid_t old_uid_;
};

// The host ids that entries served from the host name "root" and "user".
fs_ops::Owners host_owners(const Sandbox& sb) {
  return {sb.host_uid(0), sb.host_uid(1000), sb.host_gid(0), sb.host_gid(1000)};
}

FileRequest request(FileOp op, const std::string& path, uint32_t uid) {
  FileRequest r;
  r.op = op;
  r.path = path;
  r.uid = uid;
  r.gid = uid;  // each sandbox user's group has its number
  return r;
}

// True when the sandbox's init cannot run file workers: serve from the host.
bool predates_workers(const Result<FileResult>& result) {
  return !result && result.error().errnum == ENOSYS && result.error().detail == kNoFileWorkers;
}

Status status_of(const Result<FileResult>& result) {
  if (!result) return result.error();
  return {};
}

// A refusal of a files-API open in its words; `verb` is "read" or "written".
Error explain_refusal(const Error& error, const std::string& path, const char* verb = "read") {
  const std::string can = std::string("can be ") + verb;
  if (error.errnum == EPERM && error.step.starts_with(proto::kPseudoFileStep))
    return Error::with_message(
        "'" + path + "' is a /proc or /sys file: only the sandbox's own files " + can, EPERM);
  if (error.errnum == EINVAL && error.step.starts_with(proto::kNotRegularStep))
    return Error::with_message(
        "'" + path + "' is a device, FIFO or socket: only regular files " + can, EINVAL);
  if (error.errnum == EACCES) {
    const char* act = std::string_view(verb) == "read" ? "read" : "write";
    return Error::with_message(
        "permission denied: the requested user cannot " + std::string(act) + " '" + path + "'",
        EACCES);
  }
  return error;
}

// For an init that cannot open files itself: the same open, from the host,
// with the user's filesystem ids on this thread.
Result<UniqueFd> open_read_on_host(const Sandbox& sb, const std::string& path, uint32_t uid) {
  const ActingAs user(sb, uid);
  return fs_ops::open_regular(sb.root_fd(), path);
}

// Served from the host: the file itself, no pipe.
Result<std::unique_ptr<fs_ops::CreatedFile>> start_write_on_host(const Sandbox& sb,
                                                                 const std::string& path,
                                                                 uint32_t owner_uid) {
  const ActingAs owner(sb, owner_uid);
  auto created = fs_ops::create_file(sb.root_fd(), path);
  if (!created) return created.error();
  return std::make_unique<fs_ops::CreatedFile>(std::move(*created));
}

// Depth-first in name order: "/" sorts before every other character, so a
// directory's children come right after it ("a", "a/b", "a-b").
bool walk_order(const EntryInfo& a, const EntryInfo& b) {
  return std::lexicographical_compare(
      a.path.begin(), a.path.end(), b.path.begin(), b.path.end(), [](char x, char y) {
        const auto rank = [](char c) { return c == '/' ? 0 : static_cast<unsigned char>(c) + 1; };
        return rank(x) < rank(y);
      });
}

}  // namespace

FileWriter::FileWriter(Target target, FileResult io)
    : target_(std::move(target)), io_(std::move(io)) {}
FileWriter::FileWriter(Target target, std::unique_ptr<fs_ops::CreatedFile> on_host)
    : target_(std::move(target)), on_host_(std::move(on_host)) {}
FileWriter::FileWriter(FileWriter&&) noexcept = default;

// Closing the pipe and the session without a commit is the worker's sign to
// remove the file; from the host it is removed here, by the name it was made
// under (a quick unlinkat).
FileWriter::~FileWriter() {
  if (!done_ && on_host_) fs_ops::remove_created(*on_host_);
}

void FileWriter::abandon() {
  if (done_) return;
  if (on_host_) {
    fs_ops::remove_created(*on_host_);
    on_host_.reset();
    return;
  }
  io_.data.reset();  // EOF with no commit before it: the worker removes the file, then answers
  if (io_.session.valid()) (void)file_client::outcome(io_.session.get());
  io_ = FileResult{};
}

Status FileWriter::write(std::string_view data) {
  if (on_host_) return write_all(on_host_->file.get(), data, "write", target_.path);
  while (!data.empty()) {
    const ssize_t n = ::write(io_.data.get(), data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      sent_ += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {  // the worker stopped reading: it says why
      auto why = file_client::outcome(io_.session.get());
      return stopped(why ? Error{"write", EPIPE, target_.path} : why.error());
    }
    if (n < 0 && errno != EAGAIN) return Error::from_errno("write", target_.path);
    pollfd ready{io_.data.get(), POLLOUT, 0};
    const int polled = ::poll(&ready, 1, kStalledWriteMs);
    if (polled == 0)
      return Error{"write", ETIMEDOUT, target_.path + ": the sandbox took no data for 30 s"};
    if (polled < 0 && errno != EINTR) return Error::from_errno("write", target_.path);
  }
  return {};
}

// A worker that ends without an answer was killed: for want of memory most
// likely (writes are charged to the sandbox, and its disk is RAM). What it
// left is removed as the user it wrote as.
Error FileWriter::stopped(const Error& error) {
  if (error.errnum != ECONNRESET) return error;
  io_ = FileResult{};
  (void)target_.sandbox->file_op(request(FileOp::kRemove, target_.path, target_.owner_uid));
  return Error::with_message("writing '" + target_.path +
                                 "' stopped: its writer in the sandbox was killed, most likely "
                                 "for want of memory (what the sandbox's disk holds counts "
                                 "toward its memory limit); free some or ask for more memory",
                             ENOSPC);
}

Status FileWriter::finish() {
  if (on_host_) {
    const int file = on_host_->file.get();
    if (auto s = fs_ops::write_metadata(file, target_.metadata, target_.path); !s) return s;
    if (target_.mode != 0 && ::fchmod(file, target_.mode & 07777) != 0)
      return Error::from_errno("chmod", target_.path);
    if (::fsync(file) != 0 && errno != EINVAL) return Error::from_errno("sync", target_.path);
    done_ = true;
    return {};
  }
  auto written = file_client::finish_write(io_, sent_);
  if (!written) return stopped(written.error());
  done_ = true;
  io_ = FileResult{};
  return {};
}

Result<UniqueFd> open_read_as(const Sandbox& sb, const std::string& path, uint32_t uid,
                              uint32_t gid) {
  auto fd = sb.open_as(path, uid, gid);
  if (!fd && fd.error().errnum == ENOSYS) fd = open_read_on_host(sb, path, uid);
  if (!fd) return explain_refusal(fd.error(), path);
  // The fd came from inside the sandbox's walls: check what it is.
  if (auto s = proto::check_readable_file(fd->get(), path); !s)
    return explain_refusal(s.error(), path);
  return fd;
}

Result<FileWriter> start_write(const Sandbox& sb, const std::string& path, uint32_t owner_uid,
                               uint32_t mode, std::map<std::string, std::string> metadata) {
  const std::string normalised = absolute_path(path, "/");
  FileRequest write = request(FileOp::kWrite, normalised, owner_uid);
  write.mode = mode;
  write.metadata = metadata;
  FileWriter::Target target{&sb, normalised, owner_uid, mode, std::move(metadata)};
  auto io = sb.file_op(write);
  if (predates_workers(io)) {
    auto on_host = start_write_on_host(sb, normalised, owner_uid);
    if (!on_host) return explain_refusal(on_host.error(), path, "written");
    return FileWriter(std::move(target), std::move(*on_host));
  }
  if (!io) return explain_refusal(io.error(), path, "written");
  return FileWriter(std::move(target), std::move(*io));
}

Result<UniqueFd> open_dir(const Sandbox& sb, const std::string& path) {
  const std::string normalised = absolute_path(path, "/");
  auto opened = sb.file_op(request(FileOp::kOpenDir, normalised, 0));
  if (predates_workers(opened)) return fs_ops::open_dir(sb.root_fd(), normalised);
  if (!opened) return opened.error();
  if (!opened->fd.valid()) return Error{"open directory", EPROTO, "the sandbox sent no handle"};
  return std::move(opened->fd);
}

Result<EntryInfo> stat(const Sandbox& sb, const std::string& path) {
  const std::string normalised = absolute_path(path, "/");
  auto found = sb.file_op(request(FileOp::kStat, normalised, 0));
  if (predates_workers(found)) return fs_ops::stat(sb.root_fd(), normalised, host_owners(sb));
  if (!found) return found.error();
  if (found->entries.size() != 1) return Error{"stat", EPROTO, "the sandbox sent no entry"};
  return std::move(found->entries.front());
}

Result<std::vector<EntryInfo>> list_dir(const Sandbox& sb, const std::string& path, int depth) {
  if (depth < 1) return Error{"list", EINVAL, "depth must be at least 1"};
  const std::string normalised = absolute_path(path, "/");
  FileRequest list = request(FileOp::kList, normalised, 0);
  list.depth = static_cast<uint32_t>(depth);
  auto listed = sb.file_op(list);
  std::vector<EntryInfo> entries;
  if (predates_workers(listed)) {
    auto on_host = fs_ops::list(sb.root_fd(), normalised, depth, host_owners(sb));
    if (!on_host) return on_host.error();
    entries = std::move(*on_host);
  } else if (!listed) {
    return listed.error();
  } else {
    entries = std::move(listed->entries);
  }
  std::sort(entries.begin(), entries.end(), walk_order);
  return entries;
}

Status make_dir(const Sandbox& sb, const std::string& path, uint32_t owner_uid) {
  const std::string normalised = absolute_path(path, "/");
  auto made = sb.file_op(request(FileOp::kMakeDir, normalised, owner_uid));
  if (!predates_workers(made)) return status_of(made);
  const ActingAs owner(sb, owner_uid);
  return fs_ops::make_dir(sb.root_fd(), normalised);
}

Status make_symlink(const Sandbox& sb, const std::string& path, const std::string& target,
                    uint32_t owner_uid) {
  const std::string normalised = absolute_path(path, "/");
  FileRequest link = request(FileOp::kSymlink, normalised, owner_uid);
  link.other = target;
  auto made = sb.file_op(link);
  if (!predates_workers(made)) return status_of(made);
  const ActingAs owner(sb, owner_uid);
  return fs_ops::make_symlink(sb.root_fd(), normalised, target);
}

Status move(const Sandbox& sb, const std::string& from, const std::string& to) {
  FileRequest rename = request(FileOp::kMove, absolute_path(from, "/"), 0);
  rename.other = absolute_path(to, "/");
  auto moved = sb.file_op(rename);
  if (!predates_workers(moved)) return status_of(moved);
  const ActingAs sandbox_root(sb, 0);
  return fs_ops::move(sb.root_fd(), rename.path, rename.other);
}

Status remove(const Sandbox& sb, const std::string& path) {
  const std::string normalised = absolute_path(path, "/");
  auto removed = sb.file_op(request(FileOp::kRemove, normalised, 0));
  if (!predates_workers(removed)) return status_of(removed);
  const ActingAs sandbox_root(sb, 0);
  return fs_ops::remove(sb.root_fd(), normalised);
}

std::string absolute_path(const std::string& path, const std::string& home) {
  return fs_ops::absolute_path(path, home);
}

}  // namespace abx::runtime::sandbox_fs
