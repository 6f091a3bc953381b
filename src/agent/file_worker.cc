#include "agent/file_worker.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "agent/caps.h"
#include "agent/launch.h"
#include "runtime/fs_ops.h"

namespace abx::agent {
namespace {

// Anything but a write must be done by then: SIGALRM ends it (and init, for
// a worker that cannot run, kills it; see server.cc).
constexpr unsigned kOperationSeconds = 60;
// kList's entries go in messages of about this size (kMaxMessage bounds them).
constexpr size_t kBatchBytes = 64 * 1024;
// The worker's two fds, moved here before anything else happens.
constexpr int kSessionFd = 3;
constexpr int kDataFd = 4;
constexpr int kWorkloadFd = 5;  // until the worker joined the workload group

// The session is a TCP connection (the agent's TCP transport): every
// message is a frame, and no fd travels.
bool framed = false;
// A TCP peer that vanished without closing: a write's worker gives up
// waiting for its next frame after this long.
constexpr int kFrameWaitSeconds = 60;

// What a worker that ran out of time says, encoded (and framed) beforehand:
// the SIGALRM handler may only call async-signal-safe functions.
std::string timed_out_reply;

void on_alarm(int) {
  (void)::send(kSessionFd, timed_out_reply.data(), timed_out_reply.size(), MSG_NOSIGNAL);
  ::_exit(1);
}

bool sent(const proto::FileReply& reply, const std::vector<int>& fds = {}) {
  if (framed) return fds.empty() && proto::send_frame(kSessionFd, proto::encode(reply));
  return static_cast<bool>(proto::send_message(kSessionFd, proto::encode(reply), fds));
}

// A daemon that stopped listening gets nothing more: the worker ends.
void send(const proto::FileReply& reply, const std::vector<int>& fds = {}) {
  if (!sent(reply, fds)) ::_exit(1);
}

proto::FileReply failure(const Error& error) {
  proto::FileReply reply;
  reply.errnum = error.errnum;
  reply.step = error.step.empty() ? "file operation" : error.step;
  reply.detail = error.detail;
  return reply;
}

// The sandbox user the worker acts as (0: root, or a rootless sandbox).
uid_t acting_uid = 0;
gid_t acting_gid = 0;

Status act_as_ids(uid_t uid, gid_t gid) {
  ::setfsgid(gid);
  ::setfsuid(uid);
  // setfsuid/setfsgid report the old id whether or not they succeeded.
  if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != uid ||
      static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != gid)
    return Error{"act as uid " + std::to_string(uid), EPERM, {}};
  return {};
}

// Makes `name` in `parent` as sandbox root and gives it to the acting user,
// checked to be the fresh, empty directory just made (not a symlink or a
// directory swapped in), so nothing else changes owner.
Status make_dir_given_to_user(int parent, const std::string& name, const std::string& path) {
  if (::mkdirat(parent, name.c_str(), 0755) != 0) return Error::from_errno("mkdir", path);
  UniqueFd made(::openat(parent, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!made.valid() || ::fstat(made.get(), &st) != 0 || st.st_uid != 0 || st.st_nlink != 2)
    return Error{"mkdir", EAGAIN, path + ": changed while it was made"};
  if (::fchownat(made.get(), "", acting_uid, acting_gid, AT_EMPTY_PATH) != 0)
    return Error::from_errno("chown", path);
  return {};
}

// envd creates every missing directory of an upload or mkdir as root and
// chowns it to the user, so a write as `user` to /new/dir/file works (E2B's
// tests rely on it). Here only the directories the user may not create go
// through sandbox root (which any caller can ask to act as anyway); the file
// itself is still written as the user, so no existing file changes hands.
Status make_dir_as_root(int parent, const std::string& name, const std::string& path) {
  if (acting_uid == 0) return Error{"mkdir", EACCES, path};
  // Only in a parent no one but root may change (so no one can swap another
  // empty directory in under the new name before it is given away); one
  // writable through a group the user's processes hold stays theirs to use.
  struct stat st {};
  if (::fstat(parent, &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0)
    return Error{"mkdir", EACCES, path};
  if (auto s = act_as_ids(0, 0); !s) ::_exit(1);
  Status made = make_dir_given_to_user(parent, name, path);
  if (auto s = act_as_ids(acting_uid, acting_gid); !s) ::_exit(1);  // never go on as root
  return made;
}

void answer(const Status& status) { send(status ? proto::FileReply{} : failure(status.error())); }

size_t encoded_size(const EntryInfo& e) {
  size_t size = 64 + e.name.size() + e.path.size() + e.owner.size() + e.group.size() +
                e.symlink_target.size();
  for (const auto& [key, value] : e.metadata) size += 8 + key.size() + value.size();
  return size;
}

void answer_entries(Result<std::vector<EntryInfo>> entries) {
  if (!entries) return send(failure(entries.error()));
  proto::FileReply batch;
  size_t bytes = 0;
  for (auto& entry : *entries) {
    bytes += encoded_size(entry);
    batch.entries.push_back(std::move(entry));
    if (bytes < kBatchBytes) continue;
    batch.done = false;
    send(batch);
    batch.entries.clear();
    bytes = 0;
  }
  batch.done = true;
  send(batch);
}

Status write_all(int file, const char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t w = ::write(file, data + done, size - done);
    if (w < 0 && errno != EINTR) return Error::from_errno("write");
    if (w > 0) done += static_cast<size_t>(w);
  }
  return {};
}

// Over TCP: the data's frames, until an empty one. A connection that ends
// or goes quiet first abandons the upload (ECONNRESET).
Result<uint64_t> copy_in_frames(int file) {
  uint64_t written = 0;
  for (std::string piece;;) {
    auto got = proto::recv_frame(kSessionFd, &piece);
    if (!got || !*got) return Error{"upload", ECONNRESET, "the connection ended mid-upload"};
    if (piece.empty()) return written;
    if (auto s = write_all(file, piece.data(), piece.size()); !s) return s.error();
    written += piece.size();
  }
}

// Moves data from the pipe into the file: splice where the filesystem takes
// it, else read and write.
Result<uint64_t> copy_in(int file) {
  if (framed) return copy_in_frames(file);
  uint64_t written = 0;
  bool use_splice = true;
  std::vector<char> buffer;
  for (;;) {
    ssize_t n = -1;
    if (use_splice) {
      n = ::splice(kDataFd, nullptr, file, nullptr, 1 << 20, SPLICE_F_MOVE);
      if (n < 0 && errno == EINVAL) {
        use_splice = false;
        continue;
      }
    } else {
      buffer.resize(256 * 1024);
      n = ::read(kDataFd, buffer.data(), buffer.size());
      if (n > 0)
        if (auto s = write_all(file, buffer.data(), static_cast<size_t>(n)); !s) return s.error();
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("write");
    if (n == 0) return written;
    written += static_cast<uint64_t>(n);
  }
}

// The daemon's commit, sent before it closed the pipe: the bytes it sent.
// None (the upload failed or was dropped): the file is abandoned.
std::optional<uint64_t> commit() {
  std::string bytes;
  std::vector<UniqueFd> fds;
  if (!framed) ::fcntl(kSessionFd, F_SETFL, O_NONBLOCK);  // sent before the pipe closed
  auto got = framed ? proto::recv_frame(kSessionFd, &bytes)
                    : proto::recv_message(kSessionFd, &bytes, &fds);
  proto::FileReply message;
  if (!got || !*got || !proto::decode(bytes, &message)) return std::nullopt;
  return message.written;
}

// Answers once the file is open (so the daemon hears of a refusal before it
// sends the body), and again when the pipe ends: the bytes written, the
// mode set, synced. An upload that is not committed leaves no file behind:
// the worker removes what it made, by its name in the directory it made it
// in, as the user it wrote as.
void write_file(int root, const FileRequest& request) {
  auto created = runtime::fs_ops::create_file(root, request.path, true, make_dir_as_root);
  if (!created) return send(failure(created.error()));
  const int file = created->file.get();
  proto::FileReply opened;
  opened.done = false;
  // The daemon may be gone already (killed right after it asked): what was
  // made goes with it, as for an upload it abandons.
  if (!sent(opened)) {
    runtime::fs_ops::remove_created(*created);
    ::_exit(1);
  }
  auto written = copy_in(file);
  if (!written) {  // out of disk, say: tell the daemon now, it is still sending
    runtime::fs_ops::remove_created(*created);
    return send(failure(Error{written.error().step, written.error().errnum, request.path}));
  }
  const std::optional<uint64_t> sent = commit();
  Status status;
  if (!sent || *sent != *written) status = Error{"write", EIO, request.path + ": upload abandoned"};
  // Always, so an overwrite clears metadata a former upload left (as envd).
  if (status) status = runtime::fs_ops::write_metadata(file, request.metadata, request.path);
  // After the data: a write by anyone but root clears set-id bits.
  if (status && request.mode != 0 && ::fchmod(file, request.mode & 07777) != 0)
    status = Error::from_errno("chmod", request.path);
  if (status && ::fsync(file) != 0 && errno != EINVAL)
    status = Error::from_errno("sync", request.path);
  if (status) status = runtime::fs_ops::commit_created(*created, request.path);
  if (!status) {
    runtime::fs_ops::remove_created(*created);
    return send(failure(status.error()));
  }
  proto::FileReply done;
  done.written = *written;
  send(done);
}

// kReadFile: the file's bytes in pieces, then the total.
void read_file(int root, const FileRequest& request) {
  auto file = runtime::fs_ops::open_regular(root, request.path);
  if (!file) return send(failure(file.error()));
  proto::FileReply piece;
  piece.done = false;
  piece.data.resize(proto::kFilePieceBytes);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(file->get(), piece.data.data(), proto::kFilePieceBytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return send(failure(Error::from_errno("read", request.path)));
    if (n == 0) break;
    piece.data.resize(static_cast<size_t>(n));
    send(piece);
    piece.data.resize(proto::kFilePieceBytes);
    total += static_cast<uint64_t>(n);
  }
  proto::FileReply done;
  done.written = total;
  send(done);
}

void run(const FileRequest& request) {
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return send(failure(Error::from_errno("open /")));
  const runtime::fs_ops::Owners owners;  // inside, root is 0 and `user` 1000
  const int r = root.get();
  switch (request.op) {
    case FileOp::kStat: {
      auto entry = runtime::fs_ops::stat(r, request.path, owners);
      if (!entry) return send(failure(entry.error()));
      return answer_entries(std::vector<EntryInfo>{std::move(*entry)});
    }
    case FileOp::kList:
      return answer_entries(
          runtime::fs_ops::list(r, request.path, static_cast<int>(request.depth), owners));
    case FileOp::kMakeDir:
      return answer(runtime::fs_ops::make_dir(r, request.path, make_dir_as_root));
    case FileOp::kSymlink:
      return answer(runtime::fs_ops::make_symlink(r, request.path, request.other));
    case FileOp::kMove:
      return answer(runtime::fs_ops::move(r, request.path, request.other));
    case FileOp::kRemove:
      return answer(runtime::fs_ops::remove(r, request.path));
    case FileOp::kWrite:
      return write_file(r, request);
    case FileOp::kOpenDir: {
      if (framed)
        return send(failure(Error{"file operation", EPROTONOSUPPORT, "no fd travels over TCP"}));
      auto dir = runtime::fs_ops::open_dir(r, request.path);
      if (!dir) return send(failure(dir.error()));
      return send(proto::FileReply{}, {dir->get()});
    }
    case FileOp::kReadFile:
      if (!framed)
        return send(failure(Error{"file operation", EPROTONOSUPPORT, "kOpen serves reads here"}));
      return read_file(r, request);
  }
  send(failure(Error{"file operation", EINVAL, "unknown operation"}));
}

// Keeps only the session, data and workload cgroup fds (-1: none), as 3, 4
// and 5: nothing else init holds (the daemon's control connection, exit
// pipes) stays within reach of the worker. First thing after the fork.
bool isolate(int session, int data, int workload) {
  const int wanted[] = {session, data, workload};
  int high[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i)
    if (wanted[i] >= 0 && (high[i] = ::fcntl(wanted[i], F_DUPFD_CLOEXEC, 100)) < 0) return false;
  for (int i = 0; i < 3; ++i) {
    if (high[i] < 0) {
      ::close(kSessionFd + i);
    } else if (::dup2(high[i], kSessionFd + i) < 0) {
      return false;
    }
  }
  ::close_range(kWorkloadFd + 1, ~0U, 0);
  return true;
}

// Acts as sandbox user uid/gid through the filesystem ids only: permission
// checks and new files' owners are that user's, while the real and saved
// uid stay root's, so the user's own processes cannot signal or trace the
// worker. Capabilities become Docker's set first; an fsuid other than 0
// then drops the file ones (overriding permissions) from it.
Status act_as(uid_t uid, gid_t gid, bool set_groups) {
  if (auto s = caps::keep_only_default_set(); !s) return s;
  if (set_groups && ::setgroups(1, &gid) != 0) return Error::from_errno("setgroups");
  if (auto s = act_as_ids(uid, gid); !s) return s;
  acting_uid = uid;
  acting_gid = gid;
  // Not dumpable (after the id change, which resets it): no process of the
  // sandbox may ptrace the worker or open its fds through /proc.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return Error::from_errno("prctl");
  return {};
}

[[noreturn]] void worker(int session, int data, int workload_procs, const FileRequest& request,
                         bool full_id_map, bool tcp) {
  framed = tcp;
  // Writes are charged to the sandbox's workload group, like the files its
  // own processes write. The rest use next to nothing and stay in init's
  // group, the sandbox's too but with headroom: a sandbox whose disk (RAM)
  // filled its memory can still have files removed to free it.
  const bool writes = request.op == FileOp::kWrite;
  const bool joins = writes && workload_procs >= 0;
  if (!isolate(session, data, joins ? workload_procs : -1)) ::_exit(1);
  if (framed) {  // blocking from here on, and bounded
    const timeval wait{kFrameWaitSeconds, 0};
    (void)::fcntl(kSessionFd, F_SETFL, 0);
    (void)::setsockopt(kSessionFd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    (void)::setsockopt(kSessionFd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
  }
  Status ready = become_workload(joins ? kWorkloadFd : -1);
  ::close(kWorkloadFd);
  if (ready)
    ready = act_as(full_id_map ? request.uid : 0, full_id_map ? request.gid : 0, full_id_map);
  if (!ready) {
    send(failure(ready.error()));
    ::_exit(1);
  }
  if (!writes && request.op != FileOp::kReadFile) {  // those two end when the peer goes
    // An answer even then, so that ending without one means killed.
    timed_out_reply = proto::encode(
        failure(Error{"file operation", ETIMEDOUT, request.path + ": not done in 60 s"}));
    if (framed) timed_out_reply = proto::frame(timed_out_reply);
    ::signal(SIGALRM, on_alarm);
    ::alarm(kOperationSeconds);
  }
  run(request);
  ::_exit(0);
}

}  // namespace

pid_t start_file_worker(UniqueFd session, const FileRequest& request, std::vector<UniqueFd> fds,
                        const proto::InitConfig& config, bool tcp) {
  // Init's own answer, before any worker: the session is still non-blocking.
  const auto refuse = [&](const Error& error) {
    const std::string reply = proto::encode(failure(error));
    if (tcp)
      (void)proto::send_frame(session.get(), reply);
    else
      (void)proto::send_message(session.get(), reply, {});
  };
  const bool writes = request.op == FileOp::kWrite;
  if (fds.size() != (writes && !tcp ? 1 : 0)) {
    refuse(Error{"file operation", EINVAL, "malformed request"});
    return -1;
  }
  const int data = writes && !tcp ? fds.front().get() : -1;
  const pid_t pid = ::fork();
  if (pid == 0)
    worker(session.get(), data, config.workload_procs_fd, request, config.full_id_map, tcp);
  if (pid < 0) refuse(Error::from_errno("fork"));
  return pid;
}

uint32_t operation_deadline_seconds(const FileRequest& request) {
  const bool streams = request.op == FileOp::kWrite || request.op == FileOp::kReadFile;
  return streams ? 0 : kOperationSeconds + 5;
}

}  // namespace abx::agent
